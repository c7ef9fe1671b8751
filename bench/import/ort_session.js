// ONNX Runtime (onnxruntime-node 1.20.1) session creation: median ms of
// ITERS creations in one process (after one warm-up), graph optimisations on.
// usage: node ort_session.js MODEL.onnx ITERS
const ort = require('onnxruntime-node');

async function main() {
  const [path, iters] = [process.argv[2], +process.argv[3]];
  const opts = {graphOptimizationLevel: 'all', intraOpNumThreads: 1, interOpNumThreads: 1};
  await ort.InferenceSession.create(path, opts);
  const t = [];
  for (let i = 0; i < iters; i++) {
    const t0 = process.hrtime.bigint();
    const s = await ort.InferenceSession.create(path, opts);
    t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    await s.release();
  }
  t.sort((a, b) => a - b);
  console.log(t[Math.floor(t.length / 2)].toFixed(3));
}
main().catch((e) => { console.error(e); process.exit(1); });
