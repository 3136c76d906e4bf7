"""Where a model's blocks, layers and parameters go on the IPUs of a pipeline, and how much memory each IPU needs,
found from the model's `config.json` and its checkpoint's header, without the weights, torch or an IPU."""
