"""The Hub side of `IPUConfig`: the client on every supported stack (`compat`), loads that answer promptly when the
Hub is down (`load`), the client's failures as the package's errors (`failures`), pushes that keep the repository's
model card (`push`, `card`); the client's retry log lines kept off stderr while the package makes its requests
(`client_logs`).

Loading goes through optimum's `BaseConfig` (transformers' `cached_file`); pushing goes through `HfApi`. What the
card shows of a placement comes as data (`card.CardAttachment`: its Markdown and picture), made above this layer.
May import: `settings`, `sdk`, `errors`, `_version`.
"""
