"""A keyword-spotting CNN over 49x10 MFCC frames (12 keywords): a stem
convolution with stride 2 in time, a stack of 3x3 convolutions unrolled
from a table, global average pooling and a linear classifier."""
import cuvil as cvl

FRAMES, COEFFS = 49, 10
KEYWORDS = 12
STACK = (
    # (channels in, channels out, stride)
    (16, 16, 1),
    (16, 32, 2),
    (32, 32, 1),
)


@cvl.model(input_shapes=[("N", 1, FRAMES, COEFFS)], weights="kws.safetensors")
def kws(mfcc, p):
    x = cvl.relu(cvl.conv2d(mfcc, p.stem.weight, p.stem.bias, stride=(2, 1), padding=(1, 1)))
    for i, (cin, cout, stride) in enumerate(STACK):
        w = p.stack[i].weight
        assert w.shape[1] == cin and w.shape[0] == cout
        x = cvl.relu(cvl.conv2d(x, w, p.stack[i].bias, stride=stride, padding=1))
    x = cvl.flatten(cvl.global_avg_pool(x), 1)
    scores = x @ p.classifier.weight.T + p.classifier.bias
    return cvl.log_softmax(scores, axis=1)
