"""The page's own CSS (tables that wrap, clickable segments) and the script that seeks the audio player when a
segment or word is clicked."""

CSS = """
.prose table.result-table { width: 100%; border: none; border-collapse: collapse; margin: 0; padding: 0; }
.prose table.result-table tr { border: none; padding: 0; }
.result-table th, .result-table td { text-align: left; vertical-align: top; padding: 6px 10px; border: none;
  border-bottom: 1px solid var(--border-color-primary); white-space: normal; overflow-wrap: break-word; }
.result-table th { font-weight: 600; }
.segments tr.segment { cursor: pointer; }
.segments tr.segment:hover, .segments tr.segment:focus { background: var(--background-fill-secondary); outline: none; }
.segments td.time, .segments th.time { width: 1%; white-space: nowrap; overflow-wrap: normal; }
.segments td.time { color: var(--body-text-color-subdued); font-variant-numeric: tabular-nums; }
.segments .clock { white-space: nowrap; }
@media (max-width: 500px) { .segments td.time { white-space: normal; } }
.segments .word { cursor: pointer; border-radius: 3px; }
.segments .word:hover { background: var(--background-fill-secondary); }
.segments .speaker { font-weight: 600; font-size: 0.85em; margin-right: 0.3em; }
.segments tr.speaker-0 td.text { border-left: 4px solid #1f77b4; } .segments tr.speaker-0 .speaker { color: #1f77b4; }
.segments tr.speaker-1 td.text { border-left: 4px solid #d62728; } .segments tr.speaker-1 .speaker { color: #d62728; }
.segments tr.speaker-2 td.text { border-left: 4px solid #2ca02c; } .segments tr.speaker-2 .speaker { color: #2ca02c; }
.segments tr.speaker-3 td.text { border-left: 4px solid #9467bd; } .segments tr.speaker-3 .speaker { color: #9467bd; }
.segments tr.speaker-4 td.text { border-left: 4px solid #ff7f0e; } .segments tr.speaker-4 .speaker { color: #ff7f0e; }
.segments tr.speaker-5 td.text { border-left: 4px solid #17becf; } .segments tr.speaker-5 .speaker { color: #17becf; }
.segments tr.speaker-6 td.text { border-left: 4px solid #8c564b; } .segments tr.speaker-6 .speaker { color: #8c564b; }
.segments tr.speaker-7 td.text { border-left: 4px solid #e377c2; } .segments tr.speaker-7 .speaker { color: #e377c2; }
.downloads td.filename, .downloads td.filename .stem { white-space: normal; overflow: visible; text-overflow: clip;
  overflow-wrap: anywhere; }
.summary-line, .note, .legend { margin: 0; }
.note { color: var(--color-accent); }
.live-text { margin: 0; font-size: var(--text-lg); line-height: 1.5; }
.live-text .tentative, .live-waiting { color: var(--body-text-color-subdued); }
.legend { font-size: var(--text-sm); color: var(--body-text-color-subdued); }
"""

# Gradio's player keeps its media element inside a shadow root (WaveSurfer); look there as well as in the light DOM.
SEEK_SCRIPT = """
<script>
(() => {
  function player(root) {
    const found = [...root.querySelectorAll("audio, video")];
    for (const host of root.querySelectorAll("*")) {
      if (host.shadowRoot) found.push(...host.shadowRoot.querySelectorAll("audio, video"));
    }
    return found.find((media) => media.currentSrc || media.src) || null;
  }
  function seek(target) {
    const item = target.closest && target.closest("[data-start]");
    const view = item && item.closest("[data-audio]");
    const root = view && document.getElementById(view.dataset.audio);
    const media = root && player(root);
    if (!media) return false;
    media.currentTime = parseFloat(item.dataset.start);
    media.play().catch(() => {});
    return true;
  }
  document.addEventListener("click", (event) => { seek(event.target); });
  document.addEventListener("keydown", (event) => {
    if ((event.key === "Enter" || event.key === " ") && seek(event.target)) event.preventDefault();
  });
})();
</script>
"""
