#!/usr/bin/python3
"""Writes the long-input seeds of the text front-end fuzzers: flat chains
(a+a+..., x.T.T..., f(x)(x)...) that build trees as deep as they are long,
right-recursive chains (x**x**...), and deep brackets, at the sizes of the
issue-25 reproductions (200,000 terms, files under 1 MiB).  Generated, not
committed, so the repository stays small.
    fuzz/gen-seeds.py OUTDIR     (writes OUTDIR/<target>/<name>)"""
import os
import sys

N = 200_000
HEAD = 'import cuvil as cvl\n\n@cvl.model(input_shapes=[(4,)])\ndef m(x):\n    return '


def dsl():
    return {
        "plus_chain.cvl.py": HEAD + " + ".join(["x"] * N) + "\n",
        "transpose_chain.cvl.py": HEAD + "x" + ".T" * N + "\n",
        "pow_chain.cvl.py": HEAD + " ** ".join(["x"] * N) + "\n",
        "call_chain.cvl.py": HEAD + "cvl.relu" + "(x)" * N + "\n",
        "subscript_chain.cvl.py": HEAD + "x" + "[0]" * N + "\n",
        "unary_chain.cvl.py": HEAD + "-" * N + "x\n",
        "not_chain.cvl.py": HEAD + "not " * N + "x\n",
        "ifexp_chain.cvl.py": HEAD + "x if x else " * (N // 4) + "x\n",
        "parens.cvl.py": HEAD + "(" * N + "x" + ")" * N + "\n",
        "lists.cvl.py": HEAD + "[" * N + "x" + "]" * N + "\n",
        "nested_calls.cvl.py": HEAD + "cvl.relu(" * N + "x" + ")" * N + "\n",
        "const_chain.cvl.py": HEAD + "x * (" + " + ".join(["1"] * N) + ")\n",
        "blocks.cvl.py": "".join(" " * i + "if 1:\n" for i in range(200)) + " " * 200 + "x = 1\n",
    }


def cuir(n_ops):
    lines = ["cuir 1", "model @chain(%x: f32[4]) -> (f32[4]) {"]
    prev = "%x"
    for i in range(n_ops):
        op = "relu(%s)" % prev if i % 2 == 0 else "add(%s, %%x)" % prev
        lines.append("  %%%d = %s : f32[4]" % (i, op))
        prev = "%%%d" % i
    lines += ["  return %s" % prev, "}"]
    return "\n".join(lines) + "\n"


def cuir_seeds():
    return {
        "chain_10k.cuir": cuir(10_000),
        "deep_attr.cuir": "cuir 1\nmodel @m(%x: f32[4]) -> (f32[4]) {\n  %0 = relu(%x) {a="
                          + "[" * N + "1" + "]" * N + "} : f32[4]\n  return %0\n}\n",
        "deep_type.cuir": "cuir 1\nmodel @m(%x: f32" + "[" * N + "4" + "]" * N + ") -> (f32[4]) {\n}\n",
    }


def yaml_seeds():
    return {
        "flow_deep.yaml": "a: " + "[" * N + "1" + "]" * N + "\n",
        "block_deep.yaml": "".join(" " * i + "k:\n" for i in range(2000)),
        "long_list.yaml": "a:\n" + "".join("  - x%d\n" % i for i in range(N // 4)),
    }


def json_seeds():
    return {"deep_array.json": "[" * N + "]" * N, "deep_object.json": '{"a":' * N + "1" + "}" * N}


TARGETS = {"fuzz_dsl": dsl, "fuzz_cuir": cuir_seeds, "fuzz_yamldoc": yaml_seeds,
           "fuzz_spec": yaml_seeds, "fuzz_jobmsg": json_seeds}


def main():
    out = sys.argv[1]
    for target, make in TARGETS.items():
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, text in make().items():
            with open(os.path.join(d, name), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
