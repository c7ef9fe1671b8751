"""A ResNet basic block: two 3x3 convolutions with batch norm and an
identity shortcut (the same network as torchvision's BasicBlock)."""
import cuvil as cvl

CHANNELS = 16


def conv_bn(x, conv, bn, eps=1e-5):
    y = cvl.conv2d(x, conv.weight, None, stride=1, padding=1)
    return cvl.batch_norm(y, bn.weight, bn.bias, bn.running_mean, bn.running_var, epsilon=eps)


@cvl.model(input_shapes=[("N", CHANNELS, 8, 8)], dtype="float32", weights="resblock.safetensors")
def resblock(x, p):
    y = cvl.relu(conv_bn(x, p.conv1, p.bn1))
    y = conv_bn(y, p.conv2, p.bn2)
    return cvl.relu(x + y)
