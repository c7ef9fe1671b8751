"""LeNet-5 for 28x28 grey images (MNIST), in the Cuvil model language."""
import cuvil as cvl


@cvl.model(input_shapes=[("N", 1, 28, 28)], dtype="float32", weights="lenet.safetensors")
def lenet(x, p):
    x = cvl.max_pool2d(cvl.relu(cvl.conv2d(x, p.conv1.weight, p.conv1.bias, padding=2)), 2)
    x = cvl.max_pool2d(cvl.relu(cvl.conv2d(x, p.conv2.weight, p.conv2.bias)), 2)
    x = cvl.flatten(x, 1)
    for i in range(2):                       # unrolled at compile time
        x = cvl.relu(x @ p.fc[i].weight.T + p.fc[i].bias)
    return cvl.softmax(x @ p.out.weight.T + p.out.bias, axis=-1)
