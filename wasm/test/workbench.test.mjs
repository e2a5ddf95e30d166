// Browser test of the workbench built by `make web`: starts wasm/cmd/serve,
// drives Debian's Chromium (headless, SwiftShader) with playwright-core and
// checks that the page paints, opens a demo model, opens files uploaded
// through the file input (a TF.js model.json with its weight file, and a
// TFLite file through the Open button's file chooser), shows the histogram
// and cluster screens, runs the codec bit-exact (also with the WebGPU
// backend), downloads the archive and generates text from the embedded
// demo language model with its weights kept compressed, and opens a model
// from nzip serve by URL (Open URL, ranges) and a store served by it on
// the Hub screen (listed by URL, one of its models opened by ranges).
//
// Fyne draws everything into one <canvas>, so results are read from the
// workbench's test hook (window.nz.state, see app/host_js.go); buttons are
// clicked with the real mouse at the positions window.nz.pos reports.
// Screenshots and metrics.json go to $NZ_SHOTS (default
// wasm/test/screenshots, gitignored).
//
//   node wasm/test/workbench.test.mjs      (make browser-test)
//
// Environment: CHROMIUM (default /usr/bin/chromium), NZ_SERVE (a built
// wasm/cmd/serve binary; default: go run), NZ_NZIP (a built nzip, for Open
// URL's server; default: go run), NZ_SHARED (the shared data, default
// ../shared: Open URL reads its real-bf16 model when present), NZ_WWW
// (default wasm/www).

import { chromium } from 'playwright-core';
import { chromiumArgs, startNzipServe, startServer } from './harness.mjs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const www = path.resolve(root, process.env.NZ_WWW || 'wasm/www');
const shots = path.resolve(root, process.env.NZ_SHOTS || 'wasm/test/screenshots');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const assets = path.join(root, 'assets/models');

// bounded waits: generous for a 2-core machine rendering with SwiftShader
const T_PAGE = 90_000; // canvas and first frame (54 MB of wasm to compile)
const T_STEP = 60_000; // one UI step (open, statistics, clusters)
const T_RUN = 180_000; // one codec run
const T_ALL = 15 * 60_000; // the whole test

const log = (...a) => console.log('[browser-test]', ...a);
let failed = false;

function fail(msg) {
  failed = true;
  throw new Error(msg);
}

function check(cond, msg) {
  if (!cond) fail('check failed: ' + msg);
  log('ok:', msg);
}

async function state(page) {
  return page.evaluate(() => (window.nz && window.nz.state ? { ...window.nz.state } : {}));
}

// waitState waits until pred(state) holds; on timeout it fails with what
// the page shows.
async function waitState(page, what, pred, timeout = T_STEP) {
  const t0 = Date.now();
  for (;;) {
    const s = await state(page);
    if (s.error && !what.includes('error')) fail(`${what}: the workbench reports an error: ${s.error}`);
    if (pred(s)) return s;
    if (Date.now() - t0 > timeout) {
      await shot(page, 'failed-' + what.replace(/\W+/g, '-'));
      fail(`${what}: not reached in ${timeout / 1000} s; state ${JSON.stringify(s)}`);
    }
    await page.waitForTimeout(100);
  }
}

let shotN = 0;
async function shot(page, name) {
  const p = path.join(shots, `${String(++shotN).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: p });
  log('screenshot', path.relative(root, p));
}

// click presses the real mouse on the widget that window.nz.pos names.
async function click(page, key) {
  const p = await page.evaluate((k) => {
    const v = window.nz.pos(k);
    return v ? { x: v.x, y: v.y, visible: v.visible } : null;
  }, key);
  if (!p || !p.visible) fail(`widget ${key} not found or not visible: ${JSON.stringify(p)}`);
  await page.mouse.click(p.x, p.y);
}

// typeInto clicks an entry, waits until it has the focus, types text and
// checks the entry holds exactly it (a key typed before the focus arrived
// is lost: under load the first character went missing); it clears and
// types again, up to three times.
async function typeInto(page, key, text) {
  for (let attempt = 0; attempt < 3; attempt++) {
    await click(page, key);
    const t0 = Date.now();
    let p = null;
    while (Date.now() - t0 < 5000) {
      p = await page.evaluate((k) => { const v = window.nz.pos(k); return v ? { text: v.text, focused: v.focused } : null; }, key);
      if (p && p.focused) break;
      await page.waitForTimeout(50);
    }
    if (!p || !p.focused) continue;
    if (p.text) {
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Backspace');
    }
    await page.keyboard.type(text);
    await page.waitForTimeout(100);
    p = await page.evaluate((k) => { const v = window.nz.pos(k); return v ? v.text : null; }, key);
    if (p === text) return;
  }
  fail(`entry ${key}: could not type ${JSON.stringify(text)}`);
}

async function selectTab(page, name) {
  await page.evaluate((n) => window.nz.selectTab(n), name);
  await waitState(page, 'tab ' + name, (s) => s.tab === name);
  await page.waitForTimeout(800); // charts rasterise on the next frames
}

async function main() {
  fs.mkdirSync(shots, { recursive: true });
  for (const f of fs.readdirSync(shots)) {
    if (f.endsWith('.png')) fs.rmSync(path.join(shots, f)); // this run's only
  }
  for (const f of ['app.wasm', 'wasm_exec.js', 'index.html', 'loader.js']) {
    if (!fs.existsSync(path.join(www, f))) fail(`${path.join(www, f)} missing: run make web`);
  }
  if (!fs.existsSync(chromiumPath)) fail(`${chromiumPath} missing: apt-get install chromium`);
  const metrics = {};
  const wasm = fs.statSync(path.join(www, 'app.wasm')).size;
  metrics.wasm_bytes = wasm;
  for (const ext of ['br', 'gz']) {
    const p = path.join(www, 'app.wasm.' + ext);
    if (fs.existsSync(p)) metrics['wasm_' + ext + '_bytes'] = fs.statSync(p).size;
  }

  const { proc: server, url } = await startServer(root, www, assets);
  log('server at', url);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
  });
  const problems = [];
  try {
    const context = await browser.newContext({ viewport: { width: 1320, height: 860 }, acceptDownloads: true });
    const page = await context.newPage();
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push('console error: ' + m.text());
    });

    // 1. the page loads, the canvas appears, the first frame is drawn
    const resp = await page.goto(url, { waitUntil: 'load', timeout: T_PAGE });
    check(resp && resp.ok(), 'index.html served');
    try {
      await page.waitForSelector('canvas', { state: 'attached', timeout: T_PAGE });
    } catch (e) {
      await shot(page, 'failed-no-canvas');
      const err = await page.evaluate(() => window.nzError || document.getElementById('nz-detail')?.textContent);
      fail(`THE CANVAS NEVER APPEARED in ${T_PAGE / 1000} s (loader says: ${err}; ${problems.join('; ')})`);
    }
    const s0 = await waitState(page, 'first frame', (s) => s.ready_ms, T_PAGE);
    const times = await page.evaluate(() => window.nzTimes);
    metrics.first_frame_ms = Math.round(times.firstFrame || +s0.ready_ms);
    metrics.wasm_downloaded_ms = Math.round(times.downloaded);
    metrics.wasm_compiled_ms = Math.round(times.compiled);
    const enc = await page.evaluate(async () => {
      const r = await fetch('app.wasm', { cache: 'no-cache' });
      await r.arrayBuffer();
      const e = performance.getEntriesByName(new URL('app.wasm', location.href).href).pop();
      return { type: r.headers.get('Content-Type'), transfer: e ? e.transferSize : 0, encoded: e ? e.encodedBodySize : 0 };
    });
    check(enc.type === 'application/wasm', `app.wasm served as application/wasm (${enc.type})`);
    metrics.wasm_transfer_bytes = enc.encoded;
    check(enc.encoded > 0 && enc.encoded < wasm / 2, `app.wasm arrives compressed (${(enc.encoded / 1e6).toFixed(1)} of ${(wasm / 1e6).toFixed(1)} MB)`);
    const loaderHidden = await page.evaluate(() => getComputedStyle(document.getElementById('nz-loading')).display === 'none');
    check(loaderHidden, 'loading screen hidden after the first frame');
    await page.waitForTimeout(500);
    await shot(page, 'start');

    // 2. a demo model, one click away on the Open screen
    const demo = 'silero_vad_legacy.onnx';
    const tDemo = Date.now();
    await click(page, 'demo:silero-vad');
    let s = await waitState(page, 'demo model histogram', (s) => s.hist === demo);
    metrics.demo_click_to_hist_ms = Date.now() - tDemo;
    metrics.demo_open_ms = +s.open_ms;
    metrics.demo_stats_ms = +s.stats_ms;
    metrics.demo_open_to_hist_ms = +s.open_to_hist_ms;
    check(s.opened === demo && s.models === '1', 'demo model silero-vad opened');
    await shot(page, 'demo-opened');

    // 3. files through the file input: a TF.js model.json with its weights
    await page.setInputFiles('#nz-file', [
      path.join(assets, 'blazeface-front/blazeface-front.json'),
      path.join(assets, 'blazeface-front/blazeface-front.bin'),
    ]);
    s = await waitState(page, 'uploaded TF.js model', (s) => s.models === '2' && s.stats === 'blazeface-front.json');
    check(s.opened === 'blazeface-front.json', 'TF.js model.json and its weight file uploaded as one model');

    // 4. the Open button opens the file chooser (the page's input)
    const chooserP = page.waitForEvent('filechooser', { timeout: 20_000 });
    await click(page, 'open');
    const chooser = await chooserP;
    check(chooser.isMultiple(), 'the Open button opens a multiple-file chooser');
    await chooser.setFiles(path.join(assets, 'selfie_segmentation.tflite'));
    s = await waitState(page, 'uploaded TFLite model', (s) => s.models === '3' && s.hist === 'selfie_segmentation.tflite');
    check(true, 'TFLite file opened through the Open button');

    // 5. histogram and cluster screens
    await selectTab(page, 'Histograms');
    await shot(page, 'histograms');
    await selectTab(page, 'Clusters');
    s = await waitState(page, 'clusters', (s) => s.clusters === 'selfie_segmentation.tflite');
    await page.waitForTimeout(800);
    await shot(page, 'clusters');

    // 6. the codec, on the uploaded TFLite model and on the 2 MB demo model
    await selectTab(page, 'Run');
    await click(page, 'run');
    s = await waitState(page, 'run 1', (s) => s.run_count === '1', T_RUN);
    check(s.run_model === 'selfie_segmentation.tflite' && s.run_codec === 'nzip', `nzip ran on the uploaded model (${s.run_model}, ${s.run_codec})`);
    check(s.run_roundtrip === 'bit-exact', `roundtrip bit-exact (${s.run_roundtrip} ${s.run_error || ''})`);
    check(s.run_sha256 && s.run_sha256 === s.run_sha256_decoded, 'SHA-256 of the decoded bytes equals the original\'s');
    check(+s.run_ratio > 1, `ratio ${s.run_ratio} > 1`);
    await page.waitForTimeout(500);
    await shot(page, 'run-uploaded');

    // the archive downloads
    const dlP = page.waitForEvent('download', { timeout: 20_000 });
    await click(page, 'archive');
    const dl = await dlP;
    const dlPath = path.join(shots, dl.suggestedFilename());
    await dl.saveAs(dlPath);
    const dlSize = fs.statSync(dlPath).size;
    check(dl.suggestedFilename() === 'selfie_segmentation.tflite.nzip' && dlSize === +s.run_compressed,
      `archive downloaded (${dl.suggestedFilename()}, ${dlSize} bytes)`);
    fs.rmSync(dlPath);

    // a setup built from the uploaded model downloads, and loads back
    // through the file input
    await selectTab(page, 'Setups');
    await click(page, 'setup-build');
    s = await waitState(page, 'setup built', (s) => s.setup === 'selfie_segmentation.tflite', T_RUN);
    const dlSetupP = page.waitForEvent('download', { timeout: 20_000 });
    await click(page, 'setup-save');
    const dlSetup = await dlSetupP;
    const setupPath = path.join(shots, 'uploaded.nzsetup');
    await dlSetup.saveAs(setupPath);
    check(dlSetup.suggestedFilename() === 'selfie_segmentation.tflite.nzsetup' && fs.statSync(setupPath).size > 0,
      `setup downloaded (${dlSetup.suggestedFilename()}, ${fs.statSync(setupPath).size} bytes)`);
    await page.setInputFiles('#nz-file', setupPath);
    s = await waitState(page, 'setup loaded', (s) => s.setup === 'uploaded');
    check(true, 'the downloaded setup loads back through the file input');
    await shot(page, 'setups');
    fs.rmSync(setupPath);

    // back to the demo model (its button switches to it) and run again
    await selectTab(page, 'Open');
    await click(page, 'demo:silero-vad');
    await waitState(page, 'switch to demo', (s) => s.hist === demo && s.tab === 'Open');
    await selectTab(page, 'Run');
    const runs = [];
    for (let i = 2; i <= 4; i++) {
      await click(page, 'run');
      s = await waitState(page, 'run ' + i, (s) => s.run_count === String(i), T_RUN);
      check(s.run_model === demo && s.run_roundtrip === 'bit-exact', `run ${i}: ${demo} bit-exact, ratio ${s.run_ratio}, ` +
        `${s.run_compress_mbs} MB/s compress, ${s.run_decompress_mbs} MB/s decompress (${s.run_threads} thread)`);
      runs.push({ c: +s.run_compress_mbs, d: +s.run_decompress_mbs });
    }
    metrics.demo_ratio = +s.run_ratio;
    metrics.demo_bytes = +s.run_bytes;
    metrics.run_threads = +s.run_threads;
    metrics.run_compress_mb_s = Math.max(...runs.map((r) => r.c));
    metrics.run_decompress_mb_s = Math.max(...runs.map((r) => r.d));
    await shot(page, 'run-demo');

    // the codec alone (no progress reports, no redraws), best of 5
    await page.evaluate(() => window.nz.bench(5));
    s = await waitState(page, 'bench', (s) => s.bench_runs || s.bench_error, T_RUN);
    check(!s.bench_error && s.bench_model === demo, `codec benchmark ran on ${s.bench_model} (${s.bench_error || 'no error'})`);
    metrics.bench_compress_mb_s = +s.bench_compress_mbs;
    metrics.bench_decompress_mb_s = +s.bench_decompress_mbs;
    metrics.decompress_mb_s = Math.max(metrics.run_decompress_mb_s, metrics.bench_decompress_mb_s);

    // the same run with the WebGPU backend (SwiftShader's adapter): the
    // kernels of decode.wgsl decode the float blocks inside the workbench
    s = await waitState(page, 'backend probe', (s) => (s.backends || '').includes('webgpu='), T_STEP);
    check(s.backends.includes('webgpu=ok'), `WebGPU backend available in the workbench (${s.backends})`);
    await page.evaluate(() => window.nz.selectBackend('webgpu'));
    await click(page, 'run');
    s = await waitState(page, 'run 5 (webgpu)', (s) => s.run_count === '5', T_RUN);
    check(s.run_backend === 'webgpu' && s.run_roundtrip === 'bit-exact' && +s.run_device_bytes > 0,
      `nzip decoded on WebGPU bit-exact: ${s.run_device_bytes} bytes on ${s.run_device}, ${(+s.run_device_gbs * 1000).toFixed(1)} MB/s (kernels, SwiftShader)`);
    metrics.webgpu_device = s.run_device;
    await shot(page, 'run-webgpu');
    await page.evaluate(() => window.nz.selectBackend('CPU'));

    // 7. generate from the embedded demo language model, its weights kept
    // compressed, and check the logits against the uncompressed run
    await selectTab(page, 'Generate');
    await click(page, 'generate');
    s = await waitState(page, 'generate', (s) => s.gen_count === '1' || s.gen_error, T_RUN);
    check(!s.gen_error && s.gen_text && s.gen_text.startsWith(', there was a little girl'),
      `stories260K generated from its archive: "${(s.gen_text || '').slice(0, 60)}…" (${s.gen_error || 'no error'})`);
    check(s.gen_identical === 'true', 'logits identical to the uncompressed run');
    check(+s.gen_resident_bytes < 0.8 * +s.gen_weights_bytes,
      `resident ${s.gen_resident_bytes} of ${s.gen_weights_bytes} uncompressed bytes, ${s.gen_tokens_per_s} tokens/s`);
    metrics.generate_tokens_per_s = +s.gen_tokens_per_s;
    metrics.generate_resident_fraction = +s.gen_resident_bytes / +s.gen_weights_bytes;
    await shot(page, 'generate');

    // 7b. the Lossy tab: the rate-distortion curves of the current model
    // (all ten methods; lowrank and kron by the Jacobi SVD) and a side-by-side
    // generation of stories260K with e8 at the slider's 4 bits
    await selectTab(page, 'Lossy');
    s = await waitState(page, 'rate-distortion', (s) => s.rd_model || s.rd_error, T_RUN);
    check(!s.rd_error && s.rd_methods === '12',
      `Lossy: ${s.rd_methods} methods measured on ${s.rd_model}, lowrank and kron by the browser's Jacobi SVD (${s.rd_error || 'no error'})`);
    // the slider's measurement shows a progress bar above the button while
    // it runs: click once it is done and the layout has settled, and again
    // if the click landed where the button was
    await waitState(page, 'the slider measured', (s) => s.rd_rate_measured, T_RUN);
    await page.waitForTimeout(800);
    for (let i = 0; i < 3; i++) {
      await click(page, 'rd-generate');
      const t0 = Date.now();
      while (!(await state(page)).rd_gen_started && Date.now() - t0 < 10_000) await page.waitForTimeout(100);
      if ((await state(page)).rd_gen_started) break;
      log('the Generate side by side click did not start it; clicking again');
    }
    s = await waitState(page, 'side-by-side generation', (s) => s.rd_gen_top1 || s.rd_gen_error, 2 * T_RUN);
    check(!s.rd_gen_error && +s.rd_gen_top1 > 0.5,
      `e8 at 4 bits: top-1 agreement ${s.rd_gen_top1}, "${(s.rd_gen_text || '').slice(0, 40)}…" (${s.rd_gen_error || 'no error'})`);
    await shot(page, 'lossy');

    s = await state(page);
    check(!s.error, `no error reported (${s.error || 'none'})`);

    // 8. Open URL: a model on `nzip serve` (its archive, served with
    // -cors for this page's origin) read by ranges: the header first, the
    // tensors when a screen needs them
    {
      const shared = path.resolve(root, process.env.NZ_SHARED || '../shared', 'models/bench/real-bf16.safetensors');
      const model = fs.existsSync(shared) ? shared : path.join(assets, 'silero_vad_legacy.onnx');
      const name = path.basename(model);
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nz-openurl-'));
      const arch = path.join(tmp, name + '.nzip');
      const nzip = process.env.NZ_NZIP ? [process.env.NZ_NZIP] : ['go', 'run', './cmd/nzip'];
      execFileSync(nzip[0], [...nzip.slice(1), 'compress', '-q', '-o', arch, model], { cwd: root });
      const origin = new URL(url).origin;
      const { proc: nzs, url: hub } = await startNzipServe(root, ['-cors', origin, 'test/remote=' + arch]);
      try {
        let fetched = 0;
        const onResp = async (r) => {
          if (!r.url().startsWith(hub + '/test/remote/resolve/')) return;
          const n = +(r.headers()['content-length'] || 0);
          fetched += n;
        };
        page.on('response', onResp);
        await selectTab(page, 'Open');
        await typeInto(page, 'url', hub + '/test/remote');
        await click(page, 'url-open');
        s = await waitState(page, 'Open URL', (s) => s.opened === name || s.error, T_STEP);
        check(!s.error && s.opened === name, `Open URL opened ${name} from nzip serve (${s.error || 'no error'})`);
        const size = fs.statSync(model).size;
        const atOpen = fetched;
        check(atOpen > 0 && atOpen < size / 2, `Open URL read ${atOpen} of ${size} bytes to open the model (the header)`);
        metrics.open_url_fetched_at_open = atOpen;
        metrics.open_url_bytes = size;
        s = await waitState(page, 'Open URL histogram', (s) => s.hist === name);
        metrics.open_url_fetched_at_hist = fetched;
        check(fetched < size / 2, `Open URL: ${fetched} of ${size} bytes fetched once the histogram of its largest tensor showed`);
        await shot(page, 'open-url');
        page.off('response', onResp);
      } finally {
        nzs.kill();
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    }

    // 8b. the Hub screen opens a store from `nzip serve -cors` by URL (a
    // page cannot read a store's directory): the shared hub's stories260K
    // base and a fine-tune, F32 and BF16 (casts and deltas: one family),
    // or two demo models without ../shared; then a model of it downloads
    // (Get) and opens in the other screens, read by ranges through the
    // server
    {
      const hubDir = path.resolve(root, process.env.NZ_SHARED || '../shared', 'hub/stories260K');
      const files = fs.existsSync(path.join(hubDir, 'base'))
        ? ['base', 'ft-continued'].flatMap((d) => ['f32', 'bf16'].map((t) => path.join(hubDir, d, `model.${t}.safetensors`)))
        : [path.join(assets, 'silero_vad_legacy.onnx'), path.join(assets, 'selfie_segmentation.tflite')];
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'nz-hubstore-'));
      const st = path.join(tmp, 'store');
      const nzip = process.env.NZ_NZIP ? [process.env.NZ_NZIP] : ['go', 'run', './cmd/nzip'];
      execFileSync(nzip[0], [...nzip.slice(1), 'store', 'init', st], { cwd: root });
      files.forEach((f, i) => execFileSync(nzip[0], [...nzip.slice(1), 'store', 'add', '-q', '-name', `hub/m${i}/${path.basename(f)}`, st, f], { cwd: root }));
      const origin = new URL(url).origin;
      const { proc: nzs, url: hub } = await startNzipServe(root, ['-cors', origin, st]);
      try {
        await selectTab(page, 'Hub');
        await typeInto(page, 'hub-loc', hub);
        await page.keyboard.press('Enter'); // Open store: right of the entry, past a narrow page's edge
        s = await waitState(page, 'Hub store by URL', (s) => s.hub_models || s.hub_error, T_STEP);
        check(!s.hub_error && s.hub_models === String(files.length) && s.hub_matrix === 'true',
          `Hub: the store served by nzip serve listed by URL, ${s.hub_models} models, matrix ${s.hub_matrix}, ${s.hub_families} families in ${s.hub_ms} ms (${s.hub_error || 'no error'})`);
        metrics.hub_url_ms = +s.hub_ms;
        await shot(page, 'hub-url');
        const before = s.models;
        await page.evaluate(() => window.nz.hubSelect(1));
        await page.waitForTimeout(300);
        // Get: the model's file read from the server, checked, downloaded
        const hubDlP = page.waitForEvent('download', { timeout: T_STEP });
        await click(page, 'hub-get');
        const hubDl = await hubDlP;
        const hubDlPath = path.join(tmp, 'got-' + hubDl.suggestedFilename());
        await hubDl.saveAs(hubDlPath);
        check(hubDl.suggestedFilename() === path.basename(files[1]) && fs.readFileSync(hubDlPath).equals(fs.readFileSync(files[1])),
          `Hub: a served model downloaded through Get, byte for byte the original (${hubDl.suggestedFilename()}, ${fs.statSync(hubDlPath).size} bytes)`);
        await click(page, 'hub-use');
        s = await waitState(page, 'Hub open', (s) => s.models !== before || s.error, T_STEP);
        check(!s.error && s.opened === `hub/m1/${path.basename(files[1])}`, `Hub: a served model opened in the workbench (${s.opened}, ${s.error || 'no error'})`);
        await selectTab(page, 'Hub');
      } finally {
        nzs.kill();
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    }

    // 9. a second page: ?demo=NAME and ?model=URL (a TF.js model.json: its
    // weight file is fetched next to it), then a file dropped on the page
    const page2 = await context.newPage();
    page2.on('pageerror', (e) => problems.push('page 2 error: ' + e.message));
    await page2.goto(url + '?demo=selfie-segmentation&model=models/blazeface-front/blazeface-front.json', { waitUntil: 'load', timeout: T_PAGE });
    s = await waitState(page2, '?model= load', (s) => s.models === '2' && s.stats === 'blazeface-front.json', T_PAGE);
    check(s.models === '2', '?demo=NAME and ?model=URL (a TF.js model with its weight file) opened');
    await page2.evaluate(async () => {
      const b = await (await fetch('models/silero_vad_legacy.onnx')).blob();
      const dt = new DataTransfer();
      dt.items.add(new File([b], 'silero_vad_legacy.onnx'));
      for (const type of ['dragenter', 'dragover', 'drop']) {
        document.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    });
    s = await waitState(page2, 'dropped file', (s) => s.models === '3' && s.hist === demo);
    check(!s.error, 'a file dropped on the page opens');
    await shot(page2, 'dropped');
    await page2.close();
    const real = problems.filter((p) => !/favicon/.test(p));
    check(real.length === 0, `no page or console errors (${real.join('; ') || 'none'})`);
  } finally {
    fs.writeFileSync(path.join(shots, 'metrics.json'), JSON.stringify(metrics, null, 1) + '\n');
    log('metrics', JSON.stringify(metrics));
    await browser.close().catch(() => {});
    server.kill();
  }
  const targets = [
    ['wasm download (brotli) ≤ 16 MB', metrics.wasm_transfer_bytes / 1e6, 16, '<='],
    ['first frame ≤ 5 s', metrics.first_frame_ms / 1000, 5, '<='],
    ['open 2 MB demo + histogram ≤ 1 s', metrics.demo_open_to_hist_ms / 1000, 1, '<='],
    ['decompress ≥ 100 MB/s', metrics.decompress_mb_s, 100, '>='],
  ];
  for (const [name, v, lim, op] of targets) {
    const ok = op === '<=' ? v <= lim : v >= lim;
    // timings depend on the machine: reported, not failed on
    log(`${ok ? 'target met   ' : 'TARGET MISSED'}: ${name}: ${v.toFixed(2)}`);
  }
}

const watchdog = setTimeout(() => {
  console.error('[browser-test] FAIL: the whole test took more than', T_ALL / 60000, 'minutes');
  process.exit(1);
}, T_ALL);
main().then(() => {
  clearTimeout(watchdog);
  log('PASS');
  process.exit(0);
}, (e) => {
  clearTimeout(watchdog);
  console.error('[browser-test] FAIL:', e.message);
  process.exit(1);
});
