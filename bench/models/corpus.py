"""corpus.py: the model corpus of bench/models/ -- which networks, and how PyTorch builds each with
random (its default) initialisation, no weights downloaded. Shared by export.py (ONNX export on
the CPU machine) and torch_gpu.py (PyTorch's latency on the GPU machine), so both build the same
network from the same seed.

Vision models: torchvision constructors, weights=None, input (1, 3, 224, 224) (inception_v3:
299 x 299). Text models: transformers from their default configs (bert-base-uncased, distilbert-
base-uncased and gpt2 sizes; built in code, nothing downloaded), eager attention, no KV cache,
input_ids (1, 128) int64; the output is the last hidden state.
"""

SEQ = 128

# name -> (family, constructor, input size or sequence length)
MODELS = {
    "resnet18": ("torchvision", "resnet18", 224),
    "resnet50": ("torchvision", "resnet50", 224),
    "resnext50_32x4d": ("torchvision", "resnext50_32x4d", 224),
    "wide_resnet50_2": ("torchvision", "wide_resnet50_2", 224),
    "inception_v3": ("torchvision", "inception_v3", 299),
    "googlenet": ("torchvision", "googlenet", 224),
    "squeezenet1_1": ("torchvision", "squeezenet1_1", 224),
    "mobilenet_v3_large": ("torchvision", "mobilenet_v3_large", 224),
    "efficientnet_b0": ("torchvision", "efficientnet_b0", 224),
    "regnet_y_400mf": ("torchvision", "regnet_y_400mf", 224),
    "convnext_tiny": ("torchvision", "convnext_tiny", 224),
    "vit_b_16": ("torchvision", "vit_b_16", 224),
    "swin_t": ("torchvision", "swin_t", 224),
    "bert-base": ("transformers", "bert", SEQ),
    "distilbert-base": ("transformers", "distilbert", SEQ),
    "gpt2": ("transformers", "gpt2", SEQ),
}


def _text_model(arch, attn):
    import transformers as tf
    if arch == "bert":
        cfg = tf.BertConfig()  # bert-base-uncased: 12 layers, hidden 768, 12 heads, vocab 30522
        cls = tf.BertModel
    elif arch == "distilbert":
        cfg = tf.DistilBertConfig()  # distilbert-base-uncased: 6 layers, hidden 768, 12 heads
        cls = tf.DistilBertModel
    else:
        cfg = tf.GPT2Config(use_cache=False)  # gpt2: 12 layers, hidden 768, 12 heads, vocab 50257
        cls = tf.GPT2Model
    cfg._attn_implementation = attn
    return cls(cfg), cfg.vocab_size


def _reset_zero_layers(model, torch):
    """Layers that torchvision initialises to zero (vit_b_16's classifier head) get PyTorch's
    default init of their class (reset_parameters) instead: with a zero head every output is 0 and
    no agreement check can see anything."""
    for m in model.modules():
        if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)) and not bool(m.weight.detach().any()):
            m.reset_parameters()


def build(name, batch=1, attn="eager"):
    """(module in eval mode, example inputs, input names, output names). The seed is set here, so
    the same name always gives the same weights and inputs. attn: the transformers attention
    implementation ("eager" for export: plain MatMul/Softmax; "sdpa" is PyTorch's fast path)."""
    import torch
    family, arch, size = MODELS[name]
    torch.manual_seed(0)
    if family == "torchvision":
        import torchvision
        kw = {}
        if arch in ("inception_v3", "googlenet"):
            kw = {"aux_logits": False, "init_weights": True}
        model = torchvision.models.get_model(arch, weights=None, **kw).eval()
        _reset_zero_layers(model, torch)
        x = torch.randn(batch, 3, size, size)
        return model, (x,), ["input"], ["output"]
    inner, vocab = _text_model(arch, attn)

    class LastHidden(torch.nn.Module):
        """The encoder's (decoder's) last hidden state only: one output, as TASO's BERT. gpt2 gets an
        all-ones attention mask: without one, transformers looks for packed sequences with
        torch.diff, which the TorchScript ONNX exporter lacks."""

        def __init__(self, m, ones_mask):
            super().__init__()
            self.m = m
            self.ones_mask = ones_mask

        def forward(self, input_ids):
            if self.ones_mask:
                return self.m(input_ids=input_ids, attention_mask=torch.ones_like(input_ids)).last_hidden_state
            return self.m(input_ids=input_ids).last_hidden_state

    ids = torch.randint(0, vocab, (batch, size), dtype=torch.int64)
    return LastHidden(inner, arch == "gpt2").eval(), (ids,), ["input_ids"], ["last_hidden_state"]
