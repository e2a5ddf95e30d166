// WebGPU test: the decode kernels in WGSL (gpu/kernels/decode.wgsl) run in
// Debian's Chromium (headless, --enable-unsafe-webgpu: the SwiftShader
// adapter) through playwright-core, bit-exact against the original files
// and the kernels' Go twin, on real models: the demo models of assets/
// (F32 TFLite and ONNX), synthetic sparse tensors (BF16, FP8) and, when
// ../shared is present, the bench corpus (BF16, F16, F32 safetensors) and
// real ReLU² activations (sparse blocks: masks decoded by the planner,
// values scattered by merge). Each model is compressed with two chunk
// sizes (4-stream Huffman, pair codes, joins, dropped bits), and a damaged
// archive must fail. codec/testdata/golden-v3-1x.nzip, by an earlier
// encoder, is decoded as it is: it has the 1-stream Huffman blocks today's
// encoder writes only in blocks too small for the device.
//
//   node wasm/test/webgpu.test.mjs DIR   (make webgpu-test; DIR holds
//                                         index.html, wasm_exec.js and app.wasm,
//                                         the build of wasm/cmd/gputest)
//
// Environment: CHROMIUM (default /usr/bin/chromium), NZ_SERVE (a built
// wasm/cmd/serve binary; default: go run), NZ_SHARED (default ../shared).

import { chromium } from 'playwright-core';
import { chromiumArgs, startServer } from './harness.mjs';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, '../..');
const dir = path.resolve(process.argv[2] || 'bin/webgpu-test');
const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';
const shared = path.resolve(root, process.env.NZ_SHARED || '../shared');
const T_ALL = 20 * 60_000;

const log = (...a) => console.log('[webgpu-test]', ...a);

// the models: served from a temporary directory of copies
const models = fs.mkdtempSync(path.join(os.tmpdir(), 'nzgpu-models-'));
const files = [];
function addModel(p) {
  const name = path.basename(p);
  fs.copyFileSync(p, path.join(models, name)); // the server does not follow links
  files.push('/models/' + encodeURIComponent(name));
}
addModel(path.join(root, 'assets/models/selfie_segmentation.tflite'));
addModel(path.join(root, 'assets/models/silero_vad_legacy.onnx'));
addModel(path.join(root, 'codec/testdata/golden-v3-1x.nzip'));
// sparse tensors (ReLU-like: 85 % exact zeros, the rest positive, rows of
// 256), written here so that the sparse blocks' device path is tested
// without ../shared: BF16 and FP8 E4M3 safetensors
function sparseFile(name, dtype, size) {
  const rows = 256, cols = 256, n = rows * cols;
  const data = Buffer.alloc(n * size);
  let x = 0x9e3779b9;
  const rnd = () => { x ^= x << 13; x >>>= 0; x ^= x >>> 17; x ^= x << 5; x >>>= 0; return x; };
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r % 100 < 85 || (i % cols) % 9 === 4) continue; // zero (some columns always)
    if (size === 2) data.writeUInt16LE(0x3c00 | (r >>> 8) % 0x400, 2 * i); // BF16, exponents 0x78..0x7f
    else data[i] = 0x20 | (r >>> 8) % 0x38; // E4M3, positive
  }
  const header = Buffer.from(JSON.stringify({ act: { dtype, shape: [rows, cols], data_offsets: [0, data.length] } }));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(header.length));
  fs.writeFileSync(path.join(models, name), Buffer.concat([len, header, data]));
  files.push('/models/' + encodeURIComponent(name));
}
sparseFile('sparse-synthetic.bf16.safetensors', 'BF16', 2);
sparseFile('sparse-synthetic.f8e4m3.safetensors', 'F8_E4M3', 1);
const acts = path.join(shared, 'activations');
if (fs.existsSync(acts)) {
  for (const f of ['relu2-step800.bf16.safetensors', 'relu2-step800.f8e4m3.safetensors']) {
    if (fs.existsSync(path.join(acts, f))) addModel(path.join(acts, f));
  }
}
const bench = path.join(shared, 'models/bench');
if (fs.existsSync(bench)) {
  for (const f of fs.readdirSync(bench).filter((f) => f.endsWith('.safetensors')).sort()) addModel(path.join(bench, f));
} else {
  log(`${bench} not present: testing the demo models only`);
}

async function main() {
  const { proc, url } = await startServer(root, dir, models);
  const browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: chromiumArgs,
  });
  let failed = false;
  try {
    const page = await browser.newPage();
    const problems = [];
    page.on('pageerror', (e) => problems.push('page error: ' + e.message));
    page.on('console', (m) => { if (m.type() === 'error' || m.type() === 'warning') problems.push(m.type() + ': ' + m.text()); });
    await page.goto(url + 'index.html?files=' + files.join(','), { waitUntil: 'load' });
    await page.waitForFunction(() => globalThis.nzgpuResult !== undefined, null, { timeout: T_ALL, polling: 500 });
    const res = JSON.parse(await page.evaluate(() => globalThis.nzgpuResult));
    if (res.error) throw new Error('the page reports: ' + res.error);
    log('device:', res.device);
    const want = files.reduce((n, f) => n + (f.endsWith('.nzip') ? 1 : 2), 0);
    if (res.files.length !== want) throw new Error(`${res.files.length} results for ${files.length} models, want ${want}`);
    for (const f of res.files) {
      // sparse inputs: sparse blocks in the archive, every one on the device
      const sparseOK = !/sparse|relu2/.test(f.file) || (f.sparse_blocks > 0 && f.sparse_device_blocks === f.sparse_blocks);
      const ok = !f.error && f.exact && f.twin_equal && f.hist_equal && f.damage_detected && f.device_bytes > 0 && sparseOK;
      log(`${ok ? 'ok' : 'FAILED'}: ${f.file} chunk ${f.chunk < 0 ? 'as archived' : f.chunk || 'default'}: ${f.device_bytes} of ${f.bytes} bytes on the device, ` +
        `${(f.kernel_gb_s * 1000).toFixed(0)} MB/s (kernels), exact ${f.exact}, twin ${f.twin_equal}, histogram ${f.hist_equal}, ` +
        `damage detected ${f.damage_detected}, sparse blocks ${f.sparse_device_blocks}/${f.sparse_blocks} on the device${f.error ? ', error: ' + f.error : ''}`);
      if (!ok) failed = true;
    }
    if (problems.length) {
      log('page problems:', problems.join(' | '));
      failed = true;
    }
  } finally {
    await browser.close();
    proc.kill();
    fs.rmSync(models, { recursive: true, force: true });
  }
  if (failed) throw new Error('some checks failed');
  log('all checks passed');
}

const timer = setTimeout(() => { console.error('[webgpu-test] timed out'); process.exit(1); }, T_ALL + 60_000);
main().then(() => { clearTimeout(timer); }, (e) => {
  console.error('[webgpu-test] FAILED:', e.message);
  process.exit(1);
});
