// Loads app.wasm (the Fyne workbench built for GOOS=js) with a progress
// bar, then runs it. The Go side calls window.nzLoaded() after its first
// frame; window.nzTimes records the milestones (ms since navigation) for
// the browser test and anyone curious.
(function () {
  'use strict';
  const times = (window.nzTimes = { start: performance.now() });
  const bar = document.getElementById('nz-progress');
  const detail = document.getElementById('nz-detail');
  const loading = document.getElementById('nz-loading');
  const mb = (n) => (n / 1e6).toFixed(1) + ' MB';

  function fail(msg) {
    loading.classList.add('failed');
    detail.textContent = msg;
    window.nzError = msg;
    console.error('workbench:', msg);
  }

  window.nzLoaded = function () {
    times.firstFrame = performance.now();
    loading.style.display = 'none';
  };

  // drag-and-drop highlight (the drop itself is handled in Go)
  let depth = 0;
  document.addEventListener('dragenter', () => { depth++; document.body.classList.add('dragging'); });
  document.addEventListener('dragleave', () => { if (--depth <= 0) { depth = 0; document.body.classList.remove('dragging'); } });
  document.addEventListener('drop', () => { depth = 0; document.body.classList.remove('dragging'); });

  async function uncompressedSize(resp) {
    const h = resp.headers.get('X-Uncompressed-Length');
    if (h) return +h;
    try {
      const s = await (await fetch('sizes.json', { cache: 'no-cache' })).json();
      if (s['app.wasm']) return s['app.wasm'];
    } catch (e) { /* static host without sizes.json */ }
    // without Content-Encoding, Content-Length is the size
    return resp.headers.get('Content-Encoding') ? 0 : +(resp.headers.get('Content-Length') || 0);
  }

  async function download() {
    const resp = await fetch('app.wasm', { cache: 'no-cache' });
    if (!resp.ok) throw new Error('app.wasm: HTTP ' + resp.status + ' (run make web)');
    const total = await uncompressedSize(resp);
    const reader = resp.body.getReader();
    const chunks = [];
    let got = 0;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      got += value.length;
      if (total > 0) bar.value = Math.min(got / total, 1) * 0.9;
      detail.textContent = 'Downloading the workbench: ' + mb(got) + (total > 0 ? ' of ' + mb(total) : '');
    }
    const buf = new Uint8Array(got);
    let off = 0;
    for (const c of chunks) { buf.set(c, off); off += c.length; }
    return buf;
  }

  async function main() {
    if (typeof WebAssembly !== 'object') return fail('This browser has no WebAssembly.');
    if (typeof Go !== 'function') return fail('wasm_exec.js missing (run make web).');
    const go = new Go();
    const bytes = await download();
    times.downloaded = performance.now();
    detail.textContent = 'Compiling ' + mb(bytes.length) + ' of WebAssembly…';
    bar.removeAttribute('value'); // indeterminate
    const { instance } = await WebAssembly.instantiate(bytes, go.importObject);
    times.compiled = performance.now();
    detail.textContent = 'Starting…';
    go.run(instance).then(() => fail('The workbench stopped.'));
  }

  main().catch((e) => fail(String(e && e.message || e)));
})();
