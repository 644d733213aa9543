#!/usr/bin/env python3
"""RegBench's examples read outside the engine (docs/lab.md, "regbench"): plain Python 3, no torch.

    hsm task sample regbench --split test --n 200 --json > ex.json
    python3 bench/check_regbench.py ex.json          (or - for stdin; --baselines: n-gram scores too)

For every example it parses the example's own DFA ("drawn_from"), checks the DFA's shape against the
reference's draws (berlino/seq_icl, src/dataloaders/dfa.py: 4..12 states, 4..18 symbols, 1..3 edges
per state on distinct symbols to distinct other states), walks every word from state 0 (each symbol
must leave the state by an edge: every state accepts), and recomputes at every position whether it
is scored (the next token is a symbol: not the separator, not padding) and its set of legal next
symbols (the outgoing symbols of the state the word has reached). It compares them with the
engine's "mask", "accepted" and "targets", and recomputes the task's chance (the mean of
|legal| / symbols over the answers). Exit status 1 on any disagreement.
"""
import json
import sys


def check(doc):
    problems = []
    answers = agree = words = checked_words = 0
    share_sum = 0.0
    symbols = None
    for i, ex in enumerate(doc["examples"]):
        drawn = ex["drawn_from"]
        sep, pad = drawn["separator"], drawn["pad"]
        symbols = sep  # symbols are 0..separator-1
        dfa = drawn["dfa"]
        nxt = [{e[0]: e[1] for e in out} for out in dfa["edges"]]
        alphabet = set(dfa["alphabet"])
        if not 4 <= len(nxt) <= 12:
            problems.append(f"example {i}: {len(nxt)} states")
        if not 4 <= len(alphabet) <= symbols or len(alphabet) != len(dfa["alphabet"]):
            problems.append(f"example {i}: alphabet {sorted(alphabet)}")
        for q, out in enumerate(dfa["edges"]):
            syms = [e[0] for e in out]
            tos = [e[1] for e in out]
            if not 1 <= len(out) <= 3 or len(set(syms)) != len(syms) or len(set(tos)) != len(tos):
                problems.append(f"example {i}: state {q} edges {out}")
            if q in tos or not set(syms) <= alphabet or not all(0 <= s < len(nxt) for s in tos):
                problems.append(f"example {i}: state {q} edges {out}")

        tokens, targets, mask, accepted = ex["tokens"], ex["targets"], ex["mask"], ex["accepted"]
        T = len(tokens)
        end = T
        while end > 0 and tokens[end - 1] == pad:
            end -= 1
        if any(t == pad for t in tokens[:end]):
            problems.append(f"example {i}: padding inside the words")
        # Walk the words; the state after each position.
        state_after = []
        q, length = 0, 0
        for t in range(end):
            tok = tokens[t]
            if tok == sep:
                if length == 0:
                    problems.append(f"example {i}: empty word before {t}")
                words += 1
                checked_words += 1
                q, length = 0, 0
            elif tok in nxt[q]:
                q = nxt[q][tok]
                length += 1
                if length > 49:
                    problems.append(f"example {i}: a word longer than 49 at {t}")
            else:
                problems.append(f"example {i}: symbol {tok} at {t} has no edge from state {q}: word not accepted")
                break
            state_after.append(q)
        if len(state_after) < end:
            continue
        # The last word: accepted as far as it goes (cut by the window or whole).
        words += 1
        checked_words += 1
        for t in range(T):
            if t + 1 < T:  # scored when the next token is a symbol
                scored = tokens[t + 1] not in (sep, pad)
            else:  # the window's last position: its next token is only in the target
                scored = t < end and bool(mask[t]) and targets[t] not in (sep, pad)
            if bool(mask[t]) != scored:
                problems.append(f"example {i}: mask {mask[t]} at {t}, recomputed {int(scored)}")
                continue
            if not scored:
                continue
            legal = sorted(nxt[state_after[t]])
            answers += 1
            share_sum += len(legal) / symbols
            ok = accepted[t] == legal and targets[t] in legal and (t + 1 >= T or targets[t] == tokens[t + 1])
            agree += ok
            if not ok:
                problems.append(f"example {i} at {t}: engine {accepted[t]} target {targets[t]}, recomputed {legal}")
    return {
        "examples": len(doc["examples"]),
        "words_walked": checked_words,
        "answers": answers,
        "legal_sets_agree": agree,
        "chance_recomputed": share_sum / answers if answers else float("nan"),
        "problems": problems,
    }


def ngram_baselines(doc, orders=(1, 2, 3, 4)):
    """In-context n-gram predictors, as the paper's baselines (scored by the same set rule): at t,
    the symbol that most often followed the last n-1 tokens (separators included) earlier in the
    window, backing off to shorter contexts, down to the window's most frequent symbol so far; ties
    go to the smallest id. Returns {n: accuracy over the answers}."""
    right = {n: 0 for n in orders}
    answers = 0
    for ex in doc["examples"]:
        sep, pad = ex["drawn_from"]["separator"], ex["drawn_from"]["pad"]
        tokens, mask, accepted = ex["tokens"], ex["mask"], ex["accepted"]
        # counts[k][context tuple][symbol]: what followed each context of k tokens so far
        counts = {k: {} for k in range(max(orders))}
        for t in range(len(tokens)):
            if t > 0 and tokens[t] not in (sep, pad):  # record what followed the contexts ending at t-1
                for k in range(max(orders)):
                    if t - k < 0:
                        break
                    ctx = tuple(tokens[t - k:t])
                    c = counts[k].setdefault(ctx, {})
                    c[tokens[t]] = c.get(tokens[t], 0) + 1
            if not mask[t]:
                continue
            answers += 1
            for n in orders:
                guess = 0
                for k in range(n - 1, -1, -1):
                    if t + 1 - k < 0:
                        continue
                    c = counts[k].get(tuple(tokens[t + 1 - k:t + 1]))
                    if c:
                        guess = min(c, key=lambda s: (-c[s], s))
                        break
                right[n] += guess in accepted[t]
    return {n: right[n] / answers for n in orders}, answers


def main():
    args = [a for a in sys.argv[1:] if a != "--baselines"]
    if len(args) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        sys.exit(2)
    src = sys.stdin if args[0] == "-" else open(args[0], encoding="utf-8")
    doc = json.load(src)
    if "--baselines" in sys.argv:
        acc, answers = ngram_baselines(doc)
        print(f"in-context n-gram predictors on {answers} answers: " +
              ", ".join(f"{n}-gram {a:.4f}" for n, a in acc.items()))
    r = check(doc)
    for p in r["problems"][:20]:
        print("DISAGREES:", p)
    print(f"{r['examples']} examples, {r['words_walked']} words accepted by their DFA, "
          f"{r['legal_sets_agree']} of {r['answers']} answers' legal sets, masks and targets agree; "
          f"chance recomputed {r['chance_recomputed']:.6f}; {len(r['problems'])} problems")
    sys.exit(1 if r["problems"] else 0)


if __name__ == "__main__":
    main()
