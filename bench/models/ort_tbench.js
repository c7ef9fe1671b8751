// ONNX Runtime (onnxruntime-node 1.20.1) latency on a model with several
// inputs read from .npy files (f32 or i64; i64 as BigInt64Array), in input
// order: the median of ITERS runs after 3 warm-up runs, in ms.
// usage: node ort_tbench.js MODEL.onnx THREADS ITERS IN0.npy [IN1.npy ...]
const fs = require('fs');
const ort = require('onnxruntime-node');

function readNpy(path) {
  const b = fs.readFileSync(path);
  const hlen = b.readUInt16LE(8);
  const h = b.toString('latin1', 10, 10 + hlen);
  const descr = /'descr': *'([^']*)'/.exec(h)[1];
  const shape = /'shape': *\(([^)]*)\)/.exec(h)[1].split(',').filter((s) => s.trim()).map(Number);
  const raw = b.subarray(10 + hlen);
  const data = new Uint8Array(raw).buffer;   // copy: aligned
  if (descr === '<f4') return new ort.Tensor('float32', new Float32Array(data), shape);
  if (descr === '<i8') return new ort.Tensor('int64', new BigInt64Array(data), shape);
  throw new Error(path + ': unsupported dtype ' + descr);
}

async function main() {
  const [path, threads, iters] = [process.argv[2], +process.argv[3], +process.argv[4]];
  const s = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const feeds = {};
  process.argv.slice(5).forEach((f, i) => { feeds[s.inputNames[i]] = readNpy(f); });
  for (let i = 0; i < 3; i++) await s.run(feeds);
  const t = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    await s.run(feeds);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  t.sort((a, b) => a - b);
  console.log(t[Math.floor(t.length / 2)].toFixed(3));
}
main().catch((e) => { console.error(e); process.exit(1); });
