"use strict";

const DEBOUNCE_MS = 300;
// Target word i and source word j are shown as aligned when alpha_ij is at least this share of
// the largest weight of row i: the word it attends to most, and those nearly as much.
const ALIGNED_SHARE = 0.5;

const page = {
  model: document.getElementById("model"),
  source: document.getElementById("source"),
  beam: document.getElementById("beam"),
  nbest: document.getElementById("nbest"),
  status: document.getElementById("status"),
  error: document.getElementById("error"),
  hypotheses: document.getElementById("hypotheses"),
  noAlignment: document.getElementById("no-alignment"),
  figure: document.getElementById("alignment"),
  heatmap: document.getElementById("heatmap"),
};
let architecture = "this model";
let inFlight = null; // the AbortController of the request whose answer the page waits for
let debounce = null;

async function loadModel() {
  const health = await (await fetch("/health")).json();
  architecture = health.architecture;
  page.model.textContent = `${health.architecture} on ${health.device}: ${health.model}`;
  page.beam.value = health.beam;
  page.beam.max = health.max_beam;
  if (!health.alignment) showNoAlignment();
}

function translateSoon() {
  clearTimeout(debounce);
  debounce = setTimeout(translate, DEBOUNCE_MS);
}

async function translate() {
  clearTimeout(debounce);
  const text = page.source.value;
  if (inFlight) inFlight.abort(); // the server drops the older sentence if it has not started it
  if (!text.trim()) {
    clearResults();
    return;
  }
  const request = new AbortController();
  inFlight = request;
  page.status.textContent = "translating…";
  try {
    const response = await fetch("/translate", {
      method: "POST",
      headers: {"Content-Type": "application/json"},
      body: JSON.stringify({text, beam: Number(page.beam.value), nbest: Number(page.nbest.value)}),
      signal: request.signal,
    });
    const answer = await response.json();
    if (!response.ok) throw new Error(answer.error);
    showTranslation(answer.translations[0]);
  } catch (error) {
    if (error.name !== "AbortError") showError(error.message);
  } finally {
    if (inFlight === request) {
      inFlight = null;
      page.status.textContent = "";
    }
  }
}

function clearResults() {
  page.error.hidden = true;
  page.hypotheses.replaceChildren();
  page.figure.hidden = true;
}

function showError(message) {
  clearResults();
  page.error.textContent = message;
  page.error.hidden = false;
}

function showNoAlignment() {
  page.noAlignment.textContent = `${architecture} has no alignment: it translates from one fixed-length ` +
    "summary of the sentence, without attention (RNNencdec), so there is no soft alignment to show.";
  page.noAlignment.hidden = false;
}

function showTranslation(translation) {
  clearResults();
  translation.hypotheses.forEach((hypothesis, rank) => {
    const item = document.createElement("li");
    const words = document.createElement("span");
    words.className = "translation";
    words.textContent = hypothesis.translation;
    const score = document.createElement("span");
    score.className = "score";
    score.textContent = hypothesis.score.toFixed(3);
    score.title = "fairseq's score: log2-probability per token";
    item.append(words, score);
    item.addEventListener("click", () => select(translation, rank));
    page.hypotheses.append(item);
  });
  select(translation, 0);
}

function select(translation, rank) {
  [...page.hypotheses.children].forEach((item, index) => item.classList.toggle("selected", index === rank));
  const hypothesis = translation.hypotheses[rank];
  if (hypothesis.alignment === null) {
    page.figure.hidden = true;
    showNoAlignment();
    return;
  }
  drawHeatmap(translation.source_words, hypothesis.target_words, hypothesis.alignment);
}

function header(className, word, index) {
  const cell = document.createElement("th");
  cell.className = className;
  cell.dataset.index = index;
  const label = document.createElement("span");
  label.textContent = word;
  cell.append(label);
  return cell;
}

function drawHeatmap(sourceWords, targetWords, alpha) {
  const top = document.createElement("tr");
  top.append(document.createElement("th"));
  sourceWords.forEach((word, j) => top.append(header("source-word", word, j)));
  const head = document.createElement("thead");
  head.append(top);
  const body = document.createElement("tbody");
  targetWords.forEach((word, i) => {
    const row = document.createElement("tr");
    row.append(header("target-word", word, i));
    alpha[i].forEach((weight, j) => {
      const cell = document.createElement("td");
      cell.className = "cell";
      const level = Math.round(255 * weight);
      cell.style.backgroundColor = `rgb(${level}, ${level}, ${level})`;
      cell.title = `${word} ← ${sourceWords[j]}: α = ${weight.toFixed(3)}`;
      row.append(cell);
    });
    body.append(row);
  });
  page.heatmap.replaceChildren(head, body);
  page.figure.hidden = false;
  const aligned = (i, j) => alpha[i][j] >= ALIGNED_SHARE * Math.max(...alpha[i]);
  const sources = [...head.querySelectorAll(".source-word")];
  const targets = [...body.querySelectorAll(".target-word")];
  const cells = targets.map((target) => [...target.parentElement.querySelectorAll(".cell")]);
  const clear = () => page.heatmap.querySelectorAll(".active, .aligned")
    .forEach((element) => element.classList.remove("active", "aligned"));
  // Hovering a word of one axis marks the words of the other axis aligned with it, and their cells.
  const highlight = (hovered, others, alignedWith, cellWith) => {
    clear();
    hovered.classList.add("active");
    others.forEach((other, k) => {
      if (alignedWith(k)) {
        other.classList.add("aligned");
        cellWith(k).classList.add("aligned");
      }
    });
  };
  targets.forEach((target, i) => target.addEventListener("mouseenter",
    () => highlight(target, sources, (j) => aligned(i, j), (j) => cells[i][j])));
  sources.forEach((source, j) => source.addEventListener("mouseenter",
    () => highlight(source, targets, (i) => aligned(i, j), (i) => cells[i][j])));
  page.heatmap.addEventListener("mouseleave", clear);
}

page.source.addEventListener("input", translateSoon);
page.source.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey) {
    event.preventDefault();
    translate();
  }
});
for (const control of [page.beam, page.nbest]) control.addEventListener("change", translate);
loadModel().catch((error) => showError(`the server did not answer: ${error.message}`));
