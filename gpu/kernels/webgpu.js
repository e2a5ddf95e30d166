// WebGPU host of the decode kernels (decode.wgsl), embedded in the Go
// build and evaluated by gpu/webgpu_js.go as `new Function("return (" + this + ")")()`.
// It returns {init, decode}: init(wgsl) requests an adapter and a device
// and compiles the kernels; decode(a) uploads one plan (packed to u32 words
// by webgpu_js.go), runs the kernels in order and reads back the output,
// the error flags and the histograms.
(() => {
  let device = null;
  let layout = null;
  let pipes = null;
  let limits = null;
  const KERNELS = ['build_lut', 'huff_decode', 'pair_count', 'pair_scan', 'pair_expand', 'merge', 'exp_hist'];
  const WG = 64;
  const MAXG = 65535;

  async function init(wgsl) {
    if (!globalThis.navigator || !navigator.gpu) throw new Error('this browser has no WebGPU (navigator.gpu)');
    const adapter = await navigator.gpu.requestAdapter();
    if (!adapter) throw new Error('no WebGPU adapter');
    const lim = adapter.limits;
    device = await adapter.requestDevice({
      requiredLimits: {
        maxStorageBufferBindingSize: lim.maxStorageBufferBindingSize,
        maxBufferSize: lim.maxBufferSize,
      },
    });
    limits = { binding: lim.maxStorageBufferBindingSize, buffer: lim.maxBufferSize };
    device.lost.then((i) => { device = null; console.warn('nzip webgpu: device lost:', i.message); });
    const info = adapter.info || {};
    const name = [info.vendor, info.architecture, info.device, info.description].filter((s) => s).join(' ') || 'WebGPU adapter';
    const module = device.createShaderModule({ code: wgsl });
    const ci = await module.getCompilationInfo();
    const errs = ci.messages.filter((m) => m.type === 'error');
    if (errs.length) throw new Error('WGSL: ' + errs.map((m) => `${m.lineNum}:${m.linePos} ${m.message}`).join('; '));
    const ro = { type: 'read-only-storage' };
    const rw = { type: 'storage' };
    layout = device.createBindGroupLayout({
      entries: [{ buffer: { type: 'uniform' } }, { buffer: ro }, { buffer: rw }, { buffer: ro }, { buffer: rw }, { buffer: rw }, { buffer: rw }, { buffer: rw }]
        .map((e, i) => ({ binding: i, visibility: GPUShaderStage.COMPUTE, ...e })),
    });
    const pl = device.createPipelineLayout({ bindGroupLayouts: [layout] });
    pipes = {};
    for (const k of KERNELS) {
      pipes[k] = await device.createComputePipelineAsync({ layout: pl, compute: { module, entryPoint: k } });
    }
    return { name, maxBinding: lim.maxStorageBufferBindingSize, maxBuffer: lim.maxBufferSize };
  }

  function buffer(data, bytes, usage) {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    const b = device.createBuffer({ size, usage: usage | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
    if (data && data.byteLength) {
      // writeBuffer wants a multiple of 4 bytes
      const n = data.byteLength - (data.byteLength % 4);
      if (n) device.queue.writeBuffer(b, 0, data.buffer, data.byteOffset, n);
      if (n < data.byteLength) {
        const tail = new Uint8Array(4);
        tail.set(new Uint8Array(data.buffer, data.byteOffset + n, data.byteLength - n));
        device.queue.writeBuffer(b, n, tail);
      }
    }
    return b;
  }

  async function readBack(src, bytes) {
    const size = Math.max(4, Math.ceil(bytes / 4) * 4);
    const dst = device.createBuffer({ size, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
    const enc = device.createCommandEncoder();
    enc.copyBufferToBuffer(src, 0, dst, 0, size);
    device.queue.submit([enc.finish()]);
    await dst.mapAsync(GPUMapMode.READ);
    const out = new Uint8Array(dst.getMappedRange().slice(0, bytes));
    dst.unmap();
    dst.destroy();
    return out;
  }

  // decode runs one plan: a.payload and a.weights (Uint8Array), a.streams,
  // a.pairs (pair jobs then segment list), a.blocks (Uint32Array), counts
  // and sizes as numbers. It resolves to {out, bad, hist, ms}.
  async function decode(a) {
    if (!device) throw new Error('WebGPU device lost');
    const S = GPUBufferUsage.STORAGE;
    const bufs = [];
    const mk = (d, n, u) => {
      // WebGPU reports limits and memory errors through error scopes, not
      // exceptions: check the sizes here so the message says what is wrong
      if (n > limits.binding || n > limits.buffer) throw new Error(`a buffer of ${n} bytes is over this adapter's limit (${Math.min(limits.binding, limits.buffer)})`);
      const b = buffer(d, n, u);
      bufs.push(b);
      return b;
    };
    device.pushErrorScope('out-of-memory');
    device.pushErrorScope('validation');
    let scoped = true;
    const popScopes = async () => {
      if (!scoped) return;
      scoped = false;
      const v = await device.popErrorScope();
      const m = await device.popErrorScope();
      if (v) throw new Error('WebGPU validation: ' + v.message);
      if (m) throw new Error('WebGPU out of memory: ' + m.message);
    };
    try {
      const payload = mk(a.payload, a.payload.byteLength, S);
      const weights = mk(a.weights, a.weights.byteLength, S);
      const luts = mk(null, 4 * 2048 * a.nTables, S);
      const streams = mk(a.streams, a.streams.byteLength, S);
      const pairs = mk(a.pairs, a.pairs.byteLength, S);
      const blocks = mk(a.blocks, a.blocks.byteLength, S);
      const scratch = mk(null, a.scratchBytes, S);
      const out = mk(null, a.outBytes, S);
      const bad = mk(null, 4 * (a.nStreams + a.nPairs), S);
      const counts = mk(null, 4 * a.nSegs, S);
      const hist = mk(null, a.hist ? 4 * 256 * a.nBlocks : 4, S);
      await device.queue.onSubmittedWorkDone();

      const enc = device.createCommandEncoder();
      const pass = enc.beginComputePass();
      const run = (k, jobs, aux, count, first, gx, gy) => {
        const prm = mk(new Uint32Array([count, first, a.payload.byteLength, a.nStreams]), 16, GPUBufferUsage.UNIFORM);
        const bg = device.createBindGroup({
          layout,
          entries: [prm, payload, luts, jobs, scratch, out, bad, aux].map((buffer, binding) => ({ binding, resource: { buffer } })),
        });
        pass.setPipeline(pipes[k]);
        pass.setBindGroup(0, bg);
        pass.dispatchWorkgroups(gx, gy);
      };
      const groups = (n) => Math.ceil(n / WG);
      if (a.nTables) {
        if (groups(a.nTables) > MAXG) throw new Error('too many tables for one dispatch');
        run('build_lut', weights, counts, a.nTables, 0, groups(a.nTables), 1);
      }
      if (a.nStreams) {
        if (groups(a.nStreams) > MAXG) throw new Error('too many streams for one dispatch');
        run('huff_decode', streams, counts, a.nStreams, 0, groups(a.nStreams), 1);
      }
      if (a.nSegs) {
        if (groups(a.nSegs) > MAXG || groups(a.nPairs) > MAXG) throw new Error('too many pair segments for one dispatch');
        run('pair_count', pairs, counts, a.nSegs, a.segOff, groups(a.nSegs), 1);
        run('pair_scan', pairs, counts, a.nPairs, 0, groups(a.nPairs), 1);
        run('pair_expand', pairs, counts, a.nSegs, a.segOff, groups(a.nSegs), 1);
      }
      const gx = groups(a.maxN);
      if (gx > MAXG) throw new Error('blocks too large for one dispatch');
      for (let first = 0; first < a.nBlocks; first += MAXG) {
        const gy = Math.min(MAXG, a.nBlocks - first);
        run('merge', blocks, counts, a.nBlocks, first, gx, gy);
        if (a.hist) run('exp_hist', blocks, hist, a.nBlocks, first, gx, gy);
      }
      pass.end();
      const t0 = performance.now();
      device.queue.submit([enc.finish()]);
      await device.queue.onSubmittedWorkDone();
      const ms = performance.now() - t0;
      await popScopes();
      const res = { ms };
      res.out = await readBack(out, a.outBytes);
      res.bad = await readBack(bad, 4 * (a.nStreams + a.nPairs));
      res.hist = a.hist ? await readBack(hist, 4 * 256 * a.nBlocks) : null;
      return res;
    } finally {
      if (scoped && device) {
        scoped = false;
        await device.popErrorScope();
        await device.popErrorScope();
      }
      for (const b of bufs) b.destroy();
    }
  }

  const alive = () => device !== null;
  return { init, decode, alive };
})()
