"""bahdanau-serve: a trained checkpoint behind a browser page and a JSON API.

translator    the model through fairseq's hub interface: translations, scores, word alignments
limits        what one request may ask (body, words, tokens, tokens x beam), refused up front
batching      one thread owns the model and translates waiting sentences in batches, in turns
api           the FastAPI application: the page, POST /translate, GET /health, JSON errors
connections   uvicorn's server, its connections limited in number and closed when idle
file_limit    how many connections the process's file limit (ulimit -n) leaves room for
repeated_logs a message that repeats is logged once a minute, not once each time
command_line  the bahdanau-serve command (uvicorn)
static/       the page's HTML, JavaScript and CSS, served by the package itself (no CDN)
"""
