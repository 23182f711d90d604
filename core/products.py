"""The spectral radius of a product of step matrices, in float64 NumPy: by how much N steps of
gradient descent on the lesson's batches grow or shrink an error, with heavy-ball momentum (the
2x2 steps of (error, trace)) or with an intercept (the 2x2 steps I - c*lr*H_k of (e_w, e_b), 4x4
with momentum). `core.theory` searches these for the critical learning rate, the first rate at
which the log of the radius reaches 0.

Each product is taken with every partial product rescaled to largest entry 1 and its log scale
kept, so that long runs do not overflow.
"""

from __future__ import annotations

import numpy as np


def log_radius_momentum(u, sxx, momentum):
    """log of the spectral radius of the heavy-ball product P at each sum-loss rate in `u`, any shape
    that broadcasts with `momentum`'s: the 2x2 products are rescaled at each step, their log scale
    kept, so long runs do not overflow."""
    u, momentum = np.broadcast_arrays(np.asarray(u, np.float64), np.asarray(momentum, np.float64))
    a, b, c, d = np.ones_like(u), np.zeros_like(u), np.zeros_like(u), np.ones_like(u)
    log_scale = np.zeros_like(u)
    for s in sxx:
        h = 2.0 * s
        # M = [[1 - u*h, -u*m], [h, m]] times the product so far.
        a, b, c, d = (
            (1 - u * h) * a - u * momentum * c,
            (1 - u * h) * b - u * momentum * d,
            h * a + momentum * c,
            h * b + momentum * d,
        )
        big = np.maximum.reduce([np.abs(a), np.abs(b), np.abs(c), np.abs(d)])
        big = np.where(big > 0, big, 1.0)
        a, b, c, d = a / big, b / big, c / big, d / big
        log_scale += np.log(big)
    trace, det = a + d, a * d - b * c
    disc = trace * trace - 4 * det
    with np.errstate(invalid="ignore", divide="ignore"):
        radius = np.where(disc >= 0, (np.abs(trace) + np.sqrt(np.maximum(disc, 0))) / 2, np.sqrt(np.abs(det)))
        return log_scale + np.log(radius)


def log_radius_plain(u, sxx, sx, b):
    """`log_radius_intercept` without momentum for M data sets at once: u (M, G) sum-loss rates,
    sxx and sx (M, N), b (M,); returns (M, G).

    The 2x2 step matrices I - u*2*H_k are held as four (M, G, N) arrays of their entries and
    multiplied as a pairwise tree, the later step on the left, each partial product rescaled to
    largest entry 1 (its log kept) so long runs do not overflow: elementwise arithmetic on whole
    levels, where a batched matmul of 2x2 matrices pays a call per matrix."""
    u = np.asarray(u, np.float64)[..., None]  # (M, G, 1) against the steps' (M, 1, N)
    h_xx, h_x = (2.0 * np.asarray(a, np.float64)[:, None, :] for a in (sxx, sx))
    h_b = 2.0 * np.asarray(b, np.float64)[:, None, None]
    a, d = 1.0 - u * h_xx, np.broadcast_to(1.0 - u * h_b, u.shape[:2] + h_xx.shape[-1:])
    c = -u * h_x
    entries = [a, c, c, d]  # [[a, b], [c, d]], symmetric
    steps = a.shape[-1]
    width = 1 << (steps - 1).bit_length()
    if width > steps:  # identities last, applied after every step
        pad = [(0, 0), (0, 0), (0, width - steps)]
        entries = [
            np.pad(e, pad, constant_values=v) for e, v in zip(entries, (1.0, 0.0, 0.0, 1.0), strict=True)
        ]
    log_scale, level = 0.0, 0
    while entries[0].shape[-1] > 1:
        (la, lb, lc, ld), (ea, eb, ec, ed) = (
            [e[..., 1::2] for e in entries],
            [e[..., 0::2] for e in entries],
        )
        entries = [la * ea + lb * ec, la * eb + lb * ed, lc * ea + ld * ec, lc * eb + ld * ed]
        if isinstance(log_scale, np.ndarray):
            log_scale = log_scale[..., 1::2] + log_scale[..., 0::2]
        level += 1
        if level % 2 and entries[0].shape[-1] > 1:
            continue  # entries at most 2*m**2 from m: rescaling every other level cannot overflow
        big = np.maximum(
            np.maximum(np.abs(entries[0]), np.abs(entries[1])),
            np.maximum(np.abs(entries[2]), np.abs(entries[3])),
        )
        big = np.where(big > 0, big, 1.0)
        entries = [e / big for e in entries]
        log_scale = log_scale + np.log(big)
    product = np.stack([np.stack(entries[:2], -1), np.stack(entries[2:], -1)], -2)[..., 0, :, :]
    with np.errstate(divide="ignore"):
        radius = np.log(np.max(np.abs(np.linalg.eigvals(product)), axis=-1))
    return (log_scale[..., 0] if isinstance(log_scale, np.ndarray) else log_scale) + radius


def log_radius_intercept(u, sxx, sx, b, momentum):
    """log of the spectral radius of the N steps' product for y = w*x + b at each sum-loss rate in
    `u` (any shape): 2x2 products without momentum (`log_radius_plain`), 4x4 with.

    All N step matrices are built at once and multiplied as a pairwise tree, log2(N) batched
    matmuls instead of N small ones (N = 1000 took 1.3 s one step at a time); every partial
    product is rescaled to largest entry 1, its log scale kept, so long runs do not overflow."""
    u = np.asarray(u, np.float64)
    if momentum == 0.0:
        return log_radius_plain(u.reshape(1, -1), sxx[None], sx[None], np.array([b]))[0].reshape(u.shape)
    if u.size > 64:  # in pieces of 64 rates: the 16 entries' arrays stay in cache (twice as fast)
        pieces = np.array_split(u.ravel(), -(-u.size // 64))
        return np.concatenate([log_radius_intercept(p, sxx, sx, b, momentum) for p in pieces]).reshape(
            u.shape
        )
    # The heavy-ball step [[I - u*h, -u*m*I], [h, m*I]], h = 2*H_k, as 16 entries: (G, N) arrays,
    # (G, 1) or scalars (0 where the step has none, skipped in the products).
    r = u.reshape(-1, 1)
    h11, h12, h22 = 2.0 * np.asarray(sxx, np.float64)[None], 2.0 * np.asarray(sx, np.float64)[None], 2.0 * b
    a11, a12, a22 = 1.0 - r * h11, -r * h12, 1.0 - r * h22
    drag = -r * momentum
    h11, h12 = np.broadcast_to(h11, a11.shape), np.broadcast_to(h12, a11.shape)
    step = [
        [a11, a12, drag, 0.0],
        [a12, a22, 0.0, drag],
        [h11, h12, momentum, 0.0],
        [h12, h22, 0.0, momentum],
    ]
    return log_radius_tree(step, a11.shape).reshape(u.shape)


def log_radius_tree(step, shape) -> np.ndarray:
    """log of the spectral radius of M_N ... M_1 at each of G rates, the d x d steps given as
    entries step[i][j]: (G, N) arrays, or (G, 1) arrays and floats that hold for every step (0.0
    is skipped in the products). Multiplied as a pairwise tree, the later step on the left, with
    elementwise arithmetic on whole levels (a batched matmul of 4x4 matrices pays a loop per
    matrix: N = 1000 at 512 rates took 0.9 s that way); each partial product is rescaled to
    largest entry 1 every other level, its log kept, so long runs do not overflow."""
    d, steps = len(step), shape[-1]
    product = [
        [e if np.ndim(e) == 2 and e.shape[-1] == steps else np.broadcast_to(e, shape) for e in row]
        for row in step
    ]
    sparse = [[isinstance(e, float) and e == 0.0 for e in row] for row in step]
    log_scale, level = 0.0, 0
    while steps > 1:
        later = [[e[:, 1::2] for e in row] for row in product]
        earlier = [[e[:, 0 : steps - 1 : 2] for e in row] for row in product]
        odd = steps % 2  # the last step waits, unpaired, for the next level
        merged = []
        for i in range(d):
            row = []
            for k in range(d):
                terms = [later[i][j] * earlier[j][k] for j in range(d) if not (sparse[i][j] or sparse[j][k])]
                total = terms[0]
                for term in terms[1:]:
                    total = total + term
                row.append(np.concatenate([total, product[i][k][:, -1:]], 1) if odd else total)
            merged.append(row)
        sparse = [[False] * d for _ in range(d)]
        product, steps = merged, (steps + 1) // 2
        if isinstance(log_scale, np.ndarray):
            pairs = log_scale[:, 1::2] + log_scale[:, 0 : log_scale.shape[1] - 1 : 2]
            log_scale = np.concatenate([pairs, log_scale[:, -1:]], 1) if odd else pairs
        level += 1
        if level % 2 and steps > 1:
            continue  # entries grow at most d*m**2 from m: rescaling every other level is enough
        big = np.max(np.abs(np.stack([e for row in product for e in row])), axis=0)
        big = np.where(big > 0, big, 1.0)
        product = [[e / big for e in row] for row in product]
        log_scale = log_scale + np.log(big)
    matrices = np.stack([np.stack([e[:, 0] for e in row], -1) for row in product], -2)
    with np.errstate(divide="ignore"):
        radius = np.log(np.max(np.abs(np.linalg.eigvals(matrices)), axis=-1))
    return (log_scale[:, 0] if isinstance(log_scale, np.ndarray) else log_scale) + radius
