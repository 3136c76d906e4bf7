"""What a family's description and a config's settings give, for one model: where each block, layer and parameter
goes (`layout`, `parameters`), what a micro-batch keeps and computes in each step (`costs`), the pipeline PopART runs
(`pipeline`), the memory of each kind of tensor (`memory`), the time of a step (`timing`), and the split with the
smallest largest cost (`balance`).

May import: `placement.models`, `placement.hardware`, `options`, `settings`, `errors`.
"""
