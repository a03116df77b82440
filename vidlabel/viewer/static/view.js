// vidlabel view: the page. Plain JavaScript, no build step; it only reads from its own server.
// Frames are pictures of exactly frame N (decoded or read from the store by the server), drawn on a canvas;
// the overlay (boxes, masks, labels) is a second canvas above it, drawn in the same task as the picture.
"use strict";

const PREFETCH_AHEAD = 8;
const PREFETCH_BEHIND = 2;
const PREFETCH_PARALLEL = 3;
const KEEP = 48;

const QUERY = new URLSearchParams(location.search);

const S = {
  info: null, videos: [], video: null, frames: null, count: 0, pos: 0, dir: 1, token: 0,
  pictures: new Map(), rows: new Map(), segments: [], queue: [], inflight: 0,
  filters: { labels: new Set(), origins: new Set(), statuses: new Set(), minConfidence: 0 },
  // ?format=jpeg asks for JPEG pictures (lossy, smaller); ?prefetch=0 fetches only the frame shown.
  format: QUERY.get("format") === "jpeg" ? "jpeg" : "png",
  prefetch: QUERY.get("prefetch") !== "0",
  lastRows: [], paints: [],
};
window.vidlabelView = S;

const $ = (id) => document.getElementById(id);

async function getJSON(url) {
  const response = await fetch(url);
  const body = await response.json().catch(() => ({ error: `${response.status} ${response.statusText}` }));
  if (!response.ok) throw new Error(body.error || `${response.status}`);
  return body;
}

// The colour of a row: the server's palette indexed by track id (vidlabel.viewer.track_color).
function trackColor(track) {
  const c = track === null ? S.info.untracked_color : S.info.palette[track % S.info.palette.length];
  return c;
}
const rgb = (c, a = 1) => `rgba(${c[0]}, ${c[1]}, ${c[2]}, ${a})`;

// -- frames of the current video: positions 0..total-1 map to frame numbers ----------------------------------
const total = () => (S.frames ? S.frames.length : S.count);
const frameAt = (pos) => (S.frames ? S.frames[pos] : pos);
function posOf(n, nearest = false) {
  if (!S.frames) return n >= 0 && n < S.count ? n : nearest ? Math.max(0, Math.min(S.count - 1, n)) : -1;
  let lo = 0, hi = S.frames.length;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (S.frames[mid] < n) lo = mid + 1; else hi = mid; }
  if (lo < S.frames.length && S.frames[lo] === n) return lo;
  if (!nearest) return -1;
  if (lo === 0) return 0;
  if (lo >= S.frames.length) return S.frames.length - 1;
  return n - S.frames[lo - 1] <= S.frames[lo] - n ? lo - 1 : lo;
}

// -- fetching, with a small cache and prefetch of the neighbours ----------------------------------------------
const key = (n) => `${S.video.video_id}\u0000${n}`;

function picture(n, prefetch = false) {
  const k = key(n);
  if (!S.pictures.has(k)) {
    const url = `/api/frame?video=${encodeURIComponent(S.video.video_id)}&n=${n}&format=${S.format}`;
    const p = fetch(url, { priority: prefetch ? "low" : "high" }).then(async (response) => {
      if (!response.ok) {
        const body = await response.json().catch(() => ({}));
        throw new Error(body.error || `frame ${n}: HTTP ${response.status}`);
      }
      return createImageBitmap(await response.blob());
    });
    p.catch(() => S.pictures.delete(k));
    S.pictures.set(k, p);
  }
  return S.pictures.get(k);
}

function rows(n) {
  const k = key(n);
  if (!S.rows.has(k)) {
    const p = getJSON(`/api/rows?video=${encodeURIComponent(S.video.video_id)}&n=${n}`).then((b) => b.rows);
    p.catch(() => S.rows.delete(k));
    S.rows.set(k, p);
  }
  return S.rows.get(k);
}

function forget() {
  // Drop what lies far from the current frame, oldest first (a Map iterates in insertion order).
  const near = new Set();
  for (let d = -PREFETCH_AHEAD - 2; d <= PREFETCH_AHEAD + 2; d++) {
    const pos = S.pos + d;
    if (pos >= 0 && pos < total()) near.add(key(frameAt(pos)));
  }
  for (const cache of [S.pictures, S.rows]) {
    for (const k of cache.keys()) {
      if (cache.size <= KEEP) break;
      if (near.has(k)) continue;
      const p = cache.get(k);
      cache.delete(k);
      if (cache === S.pictures) p.then((bitmap) => bitmap.close(), () => {});
    }
  }
}

function prefetch() {
  if (!S.prefetch) return;
  const wanted = [];
  for (let d = 1; d <= PREFETCH_AHEAD; d++) wanted.push(S.pos + d * S.dir);
  for (let d = 1; d <= PREFETCH_BEHIND; d++) wanted.push(S.pos - d * S.dir);
  S.queue = wanted.filter((pos) => pos >= 0 && pos < total()).map(frameAt);
  pump();
}

function pump() {
  while (S.inflight < PREFETCH_PARALLEL && S.queue.length) {
    const n = S.queue.shift();
    if (S.pictures.has(key(n)) && S.rows.has(key(n))) continue;
    S.inflight++;
    Promise.allSettled([picture(n, true), rows(n)]).then(() => { S.inflight--; pump(); });
  }
}

// -- drawing --------------------------------------------------------------------------------------------------
function visible(row) {
  const f = S.filters;
  if (!f.labels.has(row.label) || !f.origins.has(row.origin)) return false;
  if (row.status !== null && !f.statuses.has(row.status)) return false;
  if (row.origin === "model" && row.confidence !== null && row.confidence < f.minConfidence) return false;
  return true;
}

function maskImage(mask, color) {
  // Uncompressed COCO RLE: alternating runs, zeros first, column-major.
  const [h, w] = mask.size;
  const image = new ImageData(w, h);
  const d = image.data;
  let p = 0;
  mask.counts.forEach((run, i) => {
    if (i % 2 === 1) {
      for (let q = p; q < p + run; q++) {
        const o = ((q % h) * w + Math.floor(q / h)) * 4;
        d[o] = color[0]; d[o + 1] = color[1]; d[o + 2] = color[2]; d[o + 3] = 110;
      }
    }
    p += run;
  });
  const canvas = new OffscreenCanvas(w, h);
  canvas.getContext("2d").putImageData(image, 0, 0);
  return canvas;
}

function caption(row) {
  let text = row.label + (row.track_id !== null ? ` #${row.track_id}` : "");
  if (row.confidence !== null) text += ` ${row.confidence.toFixed(2)}`;
  return text;
}

function drawOverlay(list, width, height) {
  const canvas = $("overlay");
  if (canvas.width !== width || canvas.height !== height) { canvas.width = width; canvas.height = height; }
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, width, height);
  const shown = list.filter(visible);
  for (const row of shown) if (row.mask) g.drawImage(maskImage(row.mask, trackColor(row.track_id)), 0, 0);
  const size = Math.max(10, Math.round(height / 45));
  g.font = `${size}px sans-serif`;
  g.textBaseline = "top";
  for (const row of shown) {
    if (!row.box) continue;
    const [x0, y0] = row.box;
    const text = caption(row);
    const tw = Math.ceil(g.measureText(text).width) + 4;
    // Above the box where there is room, else just inside its top edge.
    const ty = y0 - size - 3 >= 0 ? y0 - size - 3 : y0 + 2;
    g.fillStyle = "rgba(0, 0, 0, 0.6)";
    g.fillRect(x0, ty, tw, size + 2);
    g.fillStyle = rgb(trackColor(row.track_id));
    g.fillText(text, x0 + 2, ty + 1);
  }
  g.lineWidth = 2;
  for (const row of shown) {
    if (!row.box || row.kind !== "box") continue;
    const [x0, y0, x1, y1] = row.box;
    g.setLineDash(row.origin === "model" ? [6, 4] : []);
    g.strokeStyle = rgb(trackColor(row.track_id));
    g.strokeRect(x0, y0, x1 - x0, y1 - y0);
  }
  g.setLineDash([]);
  return shown;
}

function cell(text) { const td = document.createElement("td"); td.textContent = text; return td; }

function drawTable(list, shown) {
  const body = $("rows").tBodies[0];
  body.replaceChildren();
  for (const row of shown) {
    const tr = document.createElement("tr");
    tr.dataset.annotationId = row.annotation_id;
    const track = cell(row.track_id === null ? "" : String(row.track_id));
    const swatch = document.createElement("span");
    swatch.className = "swatch";
    swatch.style.background = rgb(trackColor(row.track_id));
    track.prepend(swatch);
    tr.append(cell(row.annotation_id), cell(row.kind), cell(row.label), track, cell(row.origin),
      cell(row.confidence === null ? "" : row.confidence.toFixed(3)), cell(row.status ?? ""),
      cell(row.attributes ? JSON.stringify(row.attributes) : ""));
    body.append(tr);
  }
  const hidden = list.length - shown.length;
  $("rows-summary").textContent = `frame ${frameAt(S.pos)}: ${list.length} row(s)` +
    (hidden ? `, ${hidden} hidden by the filters` : "");
}

function paint(n, bitmap, list, t0) {
  const canvas = $("frame");
  if (canvas.width !== bitmap.width || canvas.height !== bitmap.height) {
    canvas.width = bitmap.width; canvas.height = bitmap.height;
  }
  canvas.getContext("2d").drawImage(bitmap, 0, 0);
  S.lastRows = list;
  drawTable(list, drawOverlay(list, bitmap.width, bitmap.height));
  $("stage").dataset.frame = n;
  if (t0 !== undefined) {
    const drawn = performance.now() - t0;
    requestAnimationFrame(() => S.paints.push({ frame: n, drawn_ms: drawn, presented_ms: performance.now() - t0 }));
  }
}

function redraw() {
  const canvas = $("frame");
  drawTable(S.lastRows, drawOverlay(S.lastRows, canvas.width, canvas.height));
}

// -- moving ---------------------------------------------------------------------------------------------------
async function show(pos, t0) {
  if (!S.video || total() === 0) return;
  pos = Math.max(0, Math.min(total() - 1, pos));
  S.dir = pos < S.pos ? -1 : pos > S.pos ? 1 : S.dir;
  S.pos = pos;
  const n = frameAt(pos);
  const token = ++S.token;
  $("frame-number").value = n;
  $("frame-of").textContent = `of ${S.count} (${pos + 1}/${total()} shown)`;
  for (const c of document.querySelectorAll(".tl-cursor")) c.style.left = `${((n + 0.5) / S.count) * 100}%`;
  history.replaceState(null, "", `#video=${encodeURIComponent(S.video.video_id)}&n=${n}`);
  try {
    const [bitmap, list] = await Promise.all([picture(n), rows(n)]);
    if (token !== S.token) return;
    $("message").textContent = "";
    paint(n, bitmap, list, t0);
  } catch (err) {
    if (token === S.token) $("message").textContent = err.message;
  }
  if (token === S.token) { forget(); prefetch(); }
}

function jump(n) {
  const pos = posOf(n);
  if (pos < 0) {
    const near = frameAt(posOf(n, true));
    $("message").textContent = S.frames
      ? `frame ${n} is not stored; nearest stored frame: ${near}`
      : `frame ${n} out of range [0, ${S.count})`;
    return;
  }
  show(pos);
}

document.addEventListener("keydown", (event) => {
  // Keys typed into the frame number, the confidence or the video list stay there; a checkbox passes them on.
  if (event.target.matches?.("input:not([type=checkbox]), select, textarea")) return;
  const step = event.shiftKey ? 10 : 1;
  let pos = null;
  if (event.key === "ArrowRight") pos = S.pos + step;
  else if (event.key === "ArrowLeft") pos = S.pos - step;
  else if (event.key === "Home") pos = 0;
  else if (event.key === "End") pos = total() - 1;
  if (pos === null) return;
  event.preventDefault();
  show(pos, performance.now());
});

// -- the timeline: one row of ticks on annotated frames, one row per marker label ---------------------------
function timelineRow(name, cls) {
  const row = document.createElement("div");
  row.className = `tl-row ${cls}`;
  const label = document.createElement("span");
  label.className = "tl-name";
  label.textContent = name;
  label.title = name;
  const track = document.createElement("div");
  track.className = "tl-track";
  const cursor = document.createElement("div");
  cursor.className = "tl-cursor";
  track.append(cursor);
  track.addEventListener("click", (event) => {
    const box = track.getBoundingClientRect();
    const n = Math.floor(((event.clientX - box.left) / box.width) * S.count);
    show(posOf(Math.max(0, Math.min(S.count - 1, n)), true));
  });
  row.append(label, track);
  $("timeline").append(row);
  return track;
}

function drawTicks() {
  const canvas = document.querySelector(".tl-ticks");
  if (!canvas) return;
  canvas.width = Math.max(1, Math.round(canvas.clientWidth * devicePixelRatio));
  canvas.height = Math.max(1, Math.round(canvas.clientHeight * devicePixelRatio));
  const g = canvas.getContext("2d");
  g.fillStyle = "#9c9";
  for (const n of S.video.annotated) g.fillRect(Math.floor(((n + 0.5) / S.count) * canvas.width), 0, 1, canvas.height);
}

function buildTimeline() {
  $("timeline").replaceChildren();
  const ticks = document.createElement("canvas");
  ticks.className = "tl-ticks";
  timelineRow("annotated", "tl-annotated").prepend(ticks);
  const byLabel = new Map();
  for (const s of S.segments) {
    if (!byLabel.has(s.label)) byLabel.set(s.label, []);
    byLabel.get(s.label).push(s);
  }
  for (const label of S.info.labels.filter((l) => byLabel.has(l))) {
    const track = timelineRow(label, "tl-marker");
    track.parentElement.dataset.label = label;
    for (const s of byLabel.get(label)) {
      const bar = document.createElement("div");
      bar.className = "tl-bar";
      Object.assign(bar.dataset, { start: s.start_frame, end: s.end_frame, annotationId: s.annotation_id });
      bar.style.left = `${(s.start_frame / S.count) * 100}%`;
      bar.style.width = `${((s.end_frame + 1 - s.start_frame) / S.count) * 100}%`;
      bar.title = `${label}: frames ${s.start_frame}..${s.end_frame}`;
      track.prepend(bar);
    }
  }
  drawTicks();
}

// -- filters and videos ---------------------------------------------------------------------------------------
function checkboxes(fieldset, values, set, colour) {
  for (const value of values) {
    set.add(value);
    const label = document.createElement("label");
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = true;
    box.value = value;
    box.addEventListener("change", () => { box.checked ? set.add(value) : set.delete(value); redraw(); });
    label.append(box, ` ${value}`);
    $(fieldset).append(label);
  }
}

async function openVideo(videoId, n) {
  S.video = S.videos.find((v) => v.video_id === videoId) || S.videos[0];
  S.frames = S.video.frames;
  S.count = S.video.frame_count;
  for (const p of S.pictures.values()) p.then((bitmap) => bitmap.close(), () => {});
  S.pictures.clear(); S.rows.clear(); S.queue = []; S.pos = 0;
  $("video").value = S.video.video_id;
  const c = S.video.counts;
  $("video-info").textContent = `${S.video.width}x${S.video.height}, ${S.video.fps ?? "?"} fps, ` +
    `${S.count} frames${S.frames ? ` (${S.frames.length} stored)` : ""}; ` +
    `boxes: ${c.box}, masks: ${c.mask}, markers: ${c.marker}`;
  S.segments = (await getJSON(`/api/segments?video=${encodeURIComponent(S.video.video_id)}`)).segments;
  buildTimeline();
  await show(posOf(n ?? frameAt(0), true));
}

async function main() {
  S.info = await getJSON("/api/info");
  document.title = `vidlabel view: ${S.info.title}`;
  $("title").textContent = S.info.title;
  S.videos = await getJSON("/api/videos");
  for (const v of S.videos) {
    const option = document.createElement("option");
    option.value = v.video_id;
    option.textContent = `${v.video_id} (frames: ${v.frame_count}, boxes: ${v.counts.box}, ` +
      `masks: ${v.counts.mask}, markers: ${v.counts.marker})`;
    $("video").append(option);
  }
  checkboxes("filter-labels", S.info.labels, S.filters.labels);
  checkboxes("filter-origins", S.info.origins, S.filters.origins);
  checkboxes("filter-statuses", S.info.statuses, S.filters.statuses);
  $("min-confidence").addEventListener("input", (e) => { S.filters.minConfidence = Number(e.target.value) || 0; redraw(); });
  $("video").addEventListener("change", (e) => openVideo(e.target.value));
  $("frame-number").addEventListener("keydown", (e) => { if (e.key === "Enter") jump(Number(e.target.value)); });
  $("first").onclick = () => show(0, performance.now());
  $("back10").onclick = () => show(S.pos - 10, performance.now());
  $("back").onclick = () => show(S.pos - 1, performance.now());
  $("forward").onclick = () => show(S.pos + 1, performance.now());
  $("forward10").onclick = () => show(S.pos + 10, performance.now());
  $("last").onclick = () => show(total() - 1, performance.now());
  addEventListener("resize", drawTicks);
  if (!S.videos.length) { $("message").textContent = "no videos"; document.body.dataset.ready = "1"; return; }
  const hash = new URLSearchParams(location.hash.slice(1));
  await openVideo(hash.get("video") ?? S.videos[0].video_id, hash.has("n") ? Number(hash.get("n")) : undefined);
  document.body.dataset.ready = "1";
}

main().catch((err) => { $("message").textContent = err.message; document.body.dataset.ready = "error"; });
