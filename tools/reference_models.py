"""Reference workloads W1-W3, copied from shared/peers/models.py (the definitions dtrain must match)."""
import torch, torch.nn as nn, torch.nn.functional as F
class MLP(nn.Module):  # W1: 784-512-512-10
    def __init__(s):
        super().__init__(); s.f1 = nn.Linear(784, 512); s.f2 = nn.Linear(512, 512); s.f3 = nn.Linear(512, 10)
    def forward(s, x):
        x = x.flatten(1); return s.f3(F.relu(s.f2(F.relu(s.f1(x)))))
class LeNet(nn.Module):  # W2: conv5x5x32 - pool - conv5x5x64 - pool - fc1024 - fc10
    def __init__(s):
        super().__init__(); s.c1 = nn.Conv2d(1, 32, 5, padding=2); s.c2 = nn.Conv2d(32, 64, 5, padding=2)
        s.f1 = nn.Linear(64 * 7 * 7, 1024); s.f2 = nn.Linear(1024, 10)
    def forward(s, x):
        x = F.max_pool2d(F.relu(s.c1(x)), 2); x = F.max_pool2d(F.relu(s.c2(x)), 2)
        return s.f2(F.relu(s.f1(x.flatten(1))))
class Block(nn.Module):
    def __init__(s, cin, cout, stride):
        super().__init__()
        s.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False); s.b1 = nn.BatchNorm2d(cout)
        s.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False); s.b2 = nn.BatchNorm2d(cout)
        s.sc = None
        if stride != 1 or cin != cout:
            s.sc = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
    def forward(s, x):
        o = F.relu(s.b1(s.c1(x))); o = s.b2(s.c2(o))
        return F.relu(o + (x if s.sc is None else s.sc(x)))
class ResNet20(nn.Module):  # W3: CIFAR-style ResNet-20, 3x32x32 input (He et al. 2016, n=3)
    def __init__(s, cin=3, classes=10):
        super().__init__()
        s.c = nn.Conv2d(cin, 16, 3, 1, 1, bias=False); s.b = nn.BatchNorm2d(16)
        layers = []; c = 16
        for cout, stride in [(16, 1), (32, 2), (64, 2)]:
            for i in range(3):
                layers.append(Block(c, cout, stride if i == 0 else 1)); c = cout
        s.layers = nn.Sequential(*layers); s.fc = nn.Linear(64, classes)
    def forward(s, x):
        x = F.relu(s.b(s.c(x))); x = s.layers(x)
        return s.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))
MODELS = {"mlp": MLP, "lenet": LeNet, "resnet20": ResNet20}
