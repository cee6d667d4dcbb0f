import pytest

from .helpers import MODELS


@pytest.fixture(params=sorted(MODELS))
def model_name(request):
    return request.param
