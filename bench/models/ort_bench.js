// ONNX Runtime (onnxruntime-node 1.20.1) latency: median ms of ITERS runs.
// usage: node ort_bench.js MODEL.onnx THREADS ITERS [SIDE]  (input 1x3xSIDExSIDE, default 224)
const ort = require('onnxruntime-node');

async function main() {
  const [path, threads, iters] = [process.argv[2], +process.argv[3], +process.argv[4]];
  const side = +(process.argv[5] || 224);
  const s = await ort.InferenceSession.create(path, {
    intraOpNumThreads: threads, interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const x = new ort.Tensor('float32', Float32Array.from({length: 3 * side * side},
                                                        (_, i) => ((i * 7919) % 1000) / 500 - 1),
                           [1, 3, side, side]);
  const feeds = {[s.inputNames[0]]: x};
  for (let i = 0; i < 5; i++) await s.run(feeds);
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
