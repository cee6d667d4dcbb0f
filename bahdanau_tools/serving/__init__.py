"""bahdanau-serve: a trained checkpoint behind a browser page and a JSON API.

translator    the model through fairseq's hub interface: translations, scores, word alignments
batching      one thread owns the model and translates the sentences that arrive together at once
api           the FastAPI application: the page, POST /translate, GET /health, JSON errors
command_line  the bahdanau-serve command (uvicorn)
static/       the page's HTML, JavaScript and CSS, served by the package itself (no CDN)
"""
