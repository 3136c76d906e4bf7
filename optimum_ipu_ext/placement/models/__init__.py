"""The model families the placement knows: what optimum-graphcore 0.7.1's `parallelize()` does with each transformers
class it pipelines, and what each of its modules holds, keeps and computes, written once per family.

`rules` is the vocabulary of a family's rows (the steps of a forward pass, the IPU each goes to, the sizes read off
`config.json`), `blocks` the building blocks a step is written in.

May import: `errors`.
"""
