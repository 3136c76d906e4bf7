"""What a family's description and a config's settings give, for one model: where each block, layer and parameter
goes (`layout`, `parameters`), what a micro-batch keeps and computes in each step (`costs`), the pipeline PopART runs
(`pipeline`), the memory of each kind of tensor (`memory`), the time of a step (`timing`); the cost of one IPU from
what it holds, keeps and computes, and of a step from its IPUs' (`cost`); a model under one build of a config
(`configured`), the cost of an IPU holding any run of layers (`layer_runs`), and the split with the smallest largest
cost (`balance`).

May import: `placement.models`, `placement.hardware`, `options`, `settings`, `errors`.
"""
