"""The GPU kit: every GPU check of the plugin in one command, on a machine with a CUDA build of
torch and no fairseq, no package registry and nothing but copied files (docs/gpu-kit.md says how).

``bash bench/gpu/run.sh`` installs fairseq from the wheels that ``bash bench/gpu/gather.sh``
gathered into ``.gpu-kit/`` where registries are reachable, then runs ``python -m bench.gpu``:

1. ``unit_tests``: the tests that build models, and the fast path's, on the GPU (pytest
   ``--device cuda``);
2. ``recurrence``: the decoder's recurrence alone, eagerly, its step compiled, its loop captured
   in CUDA graphs, and both (the default), timed: the fast path's choices measured;
3. ``step_profile``: kernels launched per target position in a training step and a beam-search
   step, the share of each step the GPU sits idle, and host synchronizations in the beams' reorders;
4. ``paper_size``: rnnsearch_50 against fairseq's lstm at matched sizes, in float32 with TF32 off
   and on and in bfloat16, batches of 80 sentences and of 8,000 tokens: training and beam-12
   decoding tokens/s, peak memory, share of the GPU's measured matrix-multiply peak;
5. ``equivalence``: CPU against GPU, values and gradients of both models on a left-padded batch
   (float32, TF32 off and in cuDNN only, training and eval mode), and the float32 demo model's
   translations;
6. ``distributed``: two fairseq-train workers on the one GPU (gloo) against one process that
   accumulates their batches, in float32 and --fp16;
7. ``precision_training``: the demo corpus trained in float32, --fp16, --bf16, --amp and
   --memory-efficient-fp16, validation losses against float32's where they still fall, and
   fairseq's lstm in float32 and --amp beside them.

Each section computes afresh in a folder of its own and writes its result as JSON beside the
report as soon as it ends (and copies both to ``--copy-to``), the report being rebuilt from every
result present (``__main__.py``). ``--dry-run`` runs every section on the CPU at tiny sizes, as the
test suite does (tests/bench/test_gpu_kit.py), so that none of it rots.
"""
