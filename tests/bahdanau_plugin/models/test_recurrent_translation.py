"""models/recurrent_translation.py: what a model's build gives both architectures."""

from ...support.models import build_tiny_model


def test_a_built_model_registers_no_absent_parameter(model_name):
    """fairseq's trainer would take the absent biases for one parameter shared between layers."""
    model = build_tiny_model(model_name)
    absent = [
        (type(module).__name__, name)
        for module in model.modules()
        for name, parameter in module._parameters.items()
        if parameter is None
    ]
    assert absent == []
    assert model.decoder.gru.gate_weights.bias is None  # still readable, as nn.Linear reads it
