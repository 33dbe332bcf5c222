"""A small word-level language model (Embedding + causal TransformerEncoder)
trained with gradient clipping, saved whole with torch.save and loaded back
with torch.load under torch.serialization.safe_globals; written for PyTorch."""

import math
import os
import pickle
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.modules.linear import NonDynamicallyQuantizableLinear

TEXT = """
the cat sat on the mat . the dog ran to the park . a bird sang in the tree .
the cat saw the bird . the dog sat on the mat . a cat ran to the tree .
the bird flew over the park . a dog saw the cat in the park .
"""


class WordLM(nn.Module):
    def __init__(self, vocab, d_model=32, nhead=4, layers=2, context=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model)
        self.pos = nn.Embedding(context, d_model)
        layer = nn.TransformerEncoderLayer(
            d_model, nhead, dim_feedforward=64, dropout=0.1, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.head = nn.Linear(d_model, vocab)
        self.context = context

    def forward(self, idx):
        t = idx.shape[1]
        pos = torch.arange(t, device=idx.device)
        x = self.tok(idx) * math.sqrt(self.tok.embedding_dim) + self.pos(pos)
        mask = nn.Transformer.generate_square_subsequent_mask(t, device=idx.device)
        return self.head(self.encoder(x, mask=mask, is_causal=True))


def batches(data, context, batch, steps, generator):
    for _ in range(steps):
        starts = torch.randint(0, len(data) - context - 1, (batch,), generator=generator)
        x = torch.stack([data[s : s + context] for s in starts.tolist()])
        y = torch.stack([data[s + 1 : s + context + 1] for s in starts.tolist()])
        yield x, y


def main():
    torch.manual_seed(0)
    device = torch.device(sys.argv[1] if len(sys.argv) > 1 else "cpu")
    words = TEXT.split() * 20
    vocab = sorted(set(words))
    stoi = {w: i for i, w in enumerate(vocab)}
    data = torch.tensor([stoi[w] for w in words], dtype=torch.long)
    context = 16

    model = WordLM(len(vocab), context=context).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    gen = torch.Generator().manual_seed(1)
    model.train()
    for step, (x, y) in enumerate(batches(data, context, 16, 150, gen)):
        x, y = x.to(device), y.to(device)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        if step % 50 == 0:
            print(f"step {step}: loss {loss.item():.4f}, grad norm {norm.item():.3f}")

    model.eval()
    x, y = next(batches(data, context, 32, 1, torch.Generator().manual_seed(2)))
    x, y = x.to(device), y.to(device)
    with torch.no_grad():
        logits = model(x)
        final = F.cross_entropy(logits.reshape(-1, len(vocab)), y.reshape(-1)).item()
    print(f"final loss {final:.4f} (uniform would be {math.log(len(vocab)):.4f})")
    assert final < 0.8, final

    with tempfile.TemporaryDirectory() as tmp:
        # The whole model, as a pickle: loading it needs its classes allowlisted.
        path = os.path.join(tmp, "lm.pt")
        torch.save(model, path)
        try:
            torch.load(path)
            raise AssertionError("weights_only loaded a module without an allowlist")
        except pickle.UnpicklingError as e:
            assert "WordLM" in str(e), e
            print("weights_only refused WordLM until allowlisted")
        allowed = [
            WordLM,
            nn.Embedding,
            nn.TransformerEncoder,
            nn.TransformerEncoderLayer,
            nn.MultiheadAttention,
            NonDynamicallyQuantizableLinear,
            nn.Linear,
            nn.LayerNorm,
            nn.Dropout,
            nn.ModuleList,
            F.relu,
        ]
        with torch.serialization.safe_globals(allowed):
            loaded = torch.load(path)
        assert type(loaded) is WordLM and not loaded.training
        with torch.no_grad():
            again = loaded(x)
        assert (again == logits).all().item(), (again - logits).abs().max()
        print("reloaded model gives the same outputs")

        # The usual training checkpoint: state dicts and numbers.
        ckpt = os.path.join(tmp, "ckpt.pt")
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": 150}, ckpt)
        state = torch.load(ckpt, map_location="cpu")
        fresh = WordLM(len(vocab), context=context)
        fresh.load_state_dict(state["model"])
        fresh.eval()
        opt2 = torch.optim.Adam(fresh.parameters(), lr=3e-3)
        opt2.load_state_dict(state["optimizer"])
        with torch.no_grad():
            cpu_logits = fresh(x.cpu())
        assert state["step"] == 150
        diff = (cpu_logits - logits.cpu()).abs().max().item()
        assert diff < 1e-4, diff
        print("state_dict checkpoint restores the model")
    print("OK")


if __name__ == "__main__":
    main()
