// Runs an ONNX model once in ONNX Runtime (onnxruntime-node 1.20.1) on a raw
// little-endian float32 input and writes its first output the same way.
// usage: node ort_run.js MODEL.onnx IN.f32 D0,D1,... OUT.f32 [THREADS]
const fs = require('fs');
const ort = require('onnxruntime-node');

async function main() {
  const [model, inPath, dims, outPath, threads] = process.argv.slice(2);
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: +(threads || 1), interOpNumThreads: 1, graphOptimizationLevel: 'all',
  });
  const buf = fs.readFileSync(inPath);
  const data = new Float32Array(buf.buffer, buf.byteOffset, buf.length / 4);
  const x = new ort.Tensor('float32', data, dims.split(',').map(Number));
  const r = await s.run({[s.inputNames[0]]: x});
  const y = r[s.outputNames[0]].data;
  fs.writeFileSync(outPath, Buffer.from(y.buffer, y.byteOffset, y.byteLength));
}
main().catch((e) => { console.error(e); process.exit(1); });
