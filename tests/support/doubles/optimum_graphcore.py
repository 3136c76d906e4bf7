"""Strict test double of optimum-graphcore 0.7.1's ``IPUTrainer`` and ``IPUTrainingArguments``, for the stack where
the real trainer cannot import (transformers 5). On the IPU-host stack the tests run the real one over the poptorch
doubles instead.

``IPUTrainer`` has 0.7.1's signature and hands poptorch what the real one hands it for a training run:
- at construction, the config's seed set to ``args.seed``, then ``to_options(compile_only=args.compile_only)``
  and the inference ones, and the model in half precision unless ``args.fp32``;
- in ``train()``, a ``poptorch.DataLoader`` over the training set with those options and the micro batch size, a
  ``poptorch.optim.AdamW`` with the arguments' hyperparameters and the trainer's accumulation types (float16, or
  float32 with ``fp32``), ``poptorch.trainingModel(model, options=..., optimizer=...)``, and compiling on the first
  batch: there the poptorch double stops (``CompilationStopped``).
Not modelled (``NotImplementedError``): pipelining the model (``to_pipelined``/``parallelize``), any other argument
than the model, config, arguments and training set, evaluation, saving. ``IPUTrainingArguments`` has the fields
that path reads, with 0.7.1's names and defaults; any other is a ``TypeError``.
"""
import copy
from dataclasses import dataclass
from typing import List, Optional

import torch
from transformers import default_data_collator

from .poptorch import models, optim


@dataclass
class IPUTrainingArguments:
    output_dir: str
    per_device_train_batch_size: int = 1
    learning_rate: float = 5e-05
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-08
    num_train_epochs: float = 3.0
    max_steps: int = -1
    seed: int = 42
    report_to: Optional[List[str]] = "none"
    fp32: bool = False
    loss_scaling: Optional[float] = None
    compile_only: bool = False


class IPUTrainer:
    def __init__(
        self,
        model=None,
        ipu_config=None,
        args=None,
        data_collator=None,
        eval_data_collator=None,
        train_dataset=None,
        eval_dataset=None,
        tokenizer=None,
        model_init=None,
        compute_metrics=None,
        callbacks=None,
        optimizers=(None, None),
        preprocess_logits_for_metrics=None,
        force_to_pipelined=False,
    ):
        others = dict(data_collator=data_collator, eval_data_collator=eval_data_collator, eval_dataset=eval_dataset,
                      tokenizer=tokenizer, model_init=model_init, compute_metrics=compute_metrics,
                      callbacks=callbacks, preprocess_logits_for_metrics=preprocess_logits_for_metrics)
        given = [name for name, value in others.items() if value is not None]
        if given or optimizers != (None, None) or force_to_pipelined or None in (model, ipu_config, args):
            raise NotImplementedError(
                f"IPUTrainer double: only model, ipu_config, args and train_dataset are modelled (given: {given})"
            )
        self.args = args
        self.ipu_config = copy.deepcopy(ipu_config)
        self.ipu_config.seed = args.seed
        self.opts = self.ipu_config.to_options(compile_only=args.compile_only)
        self.eval_opts = self.ipu_config.to_options(for_inference=True, compile_only=args.compile_only)
        self.model = model if args.fp32 else model.half()
        self.train_dataset = train_dataset

    def train(self):
        if self.train_dataset is None:
            raise ValueError("Trainer: training requires a train_dataset.")
        loader = models.DataLoader(self.opts, self.train_dataset, batch_size=self.args.per_device_train_batch_size,
                                   collate_fn=default_data_collator)
        first_order = torch.float32 if self.args.fp32 else torch.float16
        optimizer = optim.AdamW(
            self.model.parameters(), lr=self.args.learning_rate, betas=(self.args.adam_beta1, self.args.adam_beta2),
            eps=self.args.adam_epsilon, weight_decay=self.args.weight_decay, bias_correction=False,
            loss_scaling=self.args.loss_scaling, accum_type=first_order, first_order_momentum_accum_type=first_order,
            second_order_momentum_accum_type=torch.float32,
        )
        training_model = models.trainingModel(self.model.train(), options=self.opts, optimizer=optimizer)
        training_model.compile(**next(iter(loader)))
