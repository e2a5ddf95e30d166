// Shared by the browser tests (workbench.test.mjs, webgpu.test.mjs): the
// static server and Chromium's flags.

import { spawn } from 'node:child_process';

// Chromium headless on SwiftShader (no GPU), WebGPU enabled.
export const chromiumArgs = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync', '--enable-unsafe-swiftshader',
  '--enable-unsafe-webgpu'];

// startServer runs wasm/cmd/serve (NZ_SERVE, or go run) on a free port of
// 127.0.0.1, serving dir and models under /models/, and resolves to
// {proc, url}.
export function startServer(root, dir, models) {
  const args = ['-addr', '127.0.0.1:0', '-dir', dir, '-models', models];
  const proc = process.env.NZ_SERVE
    ? spawn(process.env.NZ_SERVE, args, { cwd: root })
    : spawn('go', ['run', './wasm/cmd/serve', ...args], { cwd: root });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('server did not start in 120 s: ' + out)), 120_000);
    const onData = (d) => {
      out += d;
      const m = out.match(/serving .* on (http:\/\/127\.0\.0\.1:\d+\/)/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1] });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)));
  });
}

// startNzipServe runs `nzip serve` (NZ_NZIP, or go run ./cmd/nzip) on a
// free port of 127.0.0.1 with args (sources and flags), and resolves to
// {proc, url} (url without a trailing slash).
export function startNzipServe(root, args) {
  const all = ['serve', '-addr', '127.0.0.1:0', '-cache-dir', '', ...args];
  const proc = process.env.NZ_NZIP
    ? spawn(process.env.NZ_NZIP, all, { cwd: root })
    : spawn('go', ['run', './cmd/nzip', ...all], { cwd: root });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('nzip serve did not start in 120 s: ' + out)), 120_000);
    const onData = (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/127\.0\.0\.1:\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: m[1] });
      }
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    proc.on('exit', (code) => reject(new Error(`nzip serve exited (${code}): ${out}`)));
  });
}
