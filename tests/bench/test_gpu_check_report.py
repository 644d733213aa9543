#!/usr/bin/env python3
"""bench/gpu_check_report.py (issue 49): the report a rented GPU's run leaves, and its verdict on
each goal of the issue. A wrong verdict wastes the GPU's minutes or hides a miss, so: the goals of
the H200 runs kept in docs/ are read back with the figures those runs measured, and a run folder
written here as gpu_check.sh writes one is read into a report whose every goal follows its figures.

    python3 tests/bench/test_gpu_check_report.py SOURCE_ROOT
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))
SCRIPT = os.path.join(ROOT, "bench", "gpu_check_report.py")
DOCS = os.path.join(ROOT, "docs")
MODELS = ("gpt", "hsm_ab", "hybrid_0_6")


def goals_of_report(path):
    out = subprocess.run([sys.executable, SCRIPT, "--goals", path, "--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)


class KeptReports(unittest.TestCase):
    """The H200 runs of 27 November 2026, as docs/performance.md tells them."""

    def test_decoding_run_misses_only_the_batch_256_goals(self):
        g = goals_of_report(os.path.join(DOCS, "gpu-check-h200-2026-11-27-decode.json"))
        self.assertIs(g["all_met"], False)
        self.assertEqual(g["unmet"], ["train_256_vs_eager", "train_256_vs_compiled"])
        self.assertEqual(g["unmeasured"], [])
        goals = g["goals"]
        self.assertEqual(goals["train_256_vs_eager"]["value"], {"gpt": 1.238, "hsm_ab": 0.974, "hybrid_0_6": 1.321})
        self.assertEqual(goals["train_256_vs_compiled"]["value"], {"gpt": 1.049, "hsm_ab": 0.761})
        self.assertIs(goals["train_32_vs_eager"]["met"], True)
        self.assertEqual(goals["train_32_vs_eager"]["value"]["hsm_ab"], 5.354)
        # four CUDA seeds (mean 3.728) inside this run's CPU seeds (3.605-3.772)
        loss = goals["loss_within_cpu_spread"]
        self.assertIs(loss["met"], True)
        self.assertEqual(loss["value"]["cpu_source"], "this run")
        self.assertAlmostEqual(loss["value"]["cuda_mean"], 3.7278, places=4)
        self.assertEqual(goals["decode_hsm_ab_tokens_per_s"]["value"], 5464.2)
        self.assertIs(goals["decode_cached_vs_uncached"]["met"], True)
        # the fresh-process generate ratio (1.16) is reported, not required
        self.assertIs(goals["generate_cached_vs_uncached"]["met"], False)
        self.assertIs(goals["generate_cached_vs_uncached"]["required"], False)
        self.assertIs(goals["mfu_bf16_peak"]["met"], True)

    def test_a_run_without_cpu_seeds_uses_the_recorded_spread(self):
        g = goals_of_report(os.path.join(DOCS, "gpu-check-h200-2026-11-27-graph-2.json"))
        loss = g["goals"]["loss_within_cpu_spread"]
        self.assertIs(loss["met"], True)
        self.assertIn("recorded", loss["value"]["cpu_source"])
        self.assertEqual((loss["value"]["cpu_min"], loss["value"]["cpu_max"]), (3.605, 3.772))
        # before the decoding graph: cached decoding slower than uncached
        self.assertIs(g["goals"]["decode_cached_vs_uncached"]["met"], False)
        self.assertEqual(g["goals"]["decode_cached_vs_uncached"]["value"], {"hsm_ab": 0.733, "gpt": 0.786})
        self.assertIn("decode_hsm_ab_tokens_per_s", g["unmet"])

    def test_the_first_run_misses_batch_32_too(self):
        g = goals_of_report(os.path.join(DOCS, "gpu-check-h200-2026-11-27.json"))
        self.assertIn("train_32_vs_eager", g["unmet"])
        self.assertEqual(g["goals"]["train_32_vs_eager"]["value"], {"gpt": 1.045, "hsm_ab": 1.075, "hybrid_0_6": 1.159})


class NotAReport(unittest.TestCase):
    """--goals on what is not a report: one line that names the file, exit 2, no traceback (issue 65)."""

    def goals(self, content):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(content)
        try:
            return f.name, subprocess.run([sys.executable, SCRIPT, "--goals", f.name], capture_output=True, text=True)
        finally:
            os.unlink(f.name)

    def check_refused(self, name, done, reason):
        self.assertEqual(done.returncode, 2, done.stderr)
        self.assertEqual(done.stdout, "")
        self.assertNotIn("Traceback", done.stderr)
        self.assertEqual(len(done.stderr.splitlines()), 1, done.stderr)
        self.assertIn("'%s' is not a report of bench/gpu_check.sh" % name, done.stderr)
        self.assertIn(reason, done.stderr)

    def test_text_that_is_not_json(self):
        self.check_refused(*self.goals("GPU check of Monday: all fine\n"), "Expecting value")

    def test_json_that_is_not_an_object(self):
        self.check_refused(*self.goals("[1, 2, 3]\n"), "a JSON list, not an object")

    def test_an_object_of_the_wrong_shape(self):
        self.check_refused(*self.goals('{"speed": 3, "stages": "all"}\n'), "")

    def test_a_missing_file(self):
        missing = os.path.join(tempfile.gettempdir(), "no-such-gpu-check-%d.json" % os.getpid())
        done = subprocess.run([sys.executable, SCRIPT, "--goals", missing], capture_output=True, text=True)
        self.check_refused(missing, done, "No such file or directory")

    def test_goals_with_no_file_and_no_arguments_at_all(self):
        for args, reason in ((["--goals"], "argument --goals: expected one argument"),
                             ([], "give gpu_check.sh's output folder, or --goals REPORT"),
                             (["--budget", "many"], "argument --budget: invalid int value: 'many'")):
            done = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)
            self.assertEqual(done.returncode, 2, done.stderr)
            self.assertEqual(done.stderr, "gpu_check_report: %s (see --help)\n" % reason)

    def test_a_folder(self):
        folder = tempfile.mkdtemp(prefix="gpu_report_folder.")
        try:
            done = subprocess.run([sys.executable, SCRIPT, "--goals", folder], capture_output=True, text=True)
            self.check_refused(folder, done, "Is a directory")
        finally:
            os.rmdir(folder)


class RunFolder(unittest.TestCase):
    """A folder as gpu_check.sh leaves it (status/ and results/), read by the script's folder mode."""

    def setUp(self):
        self.out = tempfile.mkdtemp(prefix="gpu_report_test.")
        self.results = os.path.join(self.out, "results")
        self.status = os.path.join(self.out, "status")
        os.makedirs(self.results)
        os.makedirs(self.status)

    def tearDown(self):
        shutil.rmtree(self.out)

    def stage(self, name, status="ok", seconds=1.0, note=""):
        with open(os.path.join(self.status, name), "w") as f:
            f.write("%s\t%s\t%s\n" % (status, seconds, note))

    def result(self, name, obj, log_first=True):
        with open(os.path.join(self.results, name), "w") as f:
            if log_first:  # the commands print log lines before their --json object
                f.write("[hsm] a line of the run's log\n")
            f.write(json.dumps(obj) + "\n")

    def write_run(self, eager_256=(1.6, 1.7, 1.8), compiled_256=(1.1, 1.2), eager_32=(4.0, 5.0, 6.0),
                  cuda_losses=(3.70, 3.72, 3.74, 3.76), cpu_losses=(3.60, 3.65, 3.75, 3.80),
                  checks="norm passed on cuda:0, gelu passed on cuda:0", graph_decode=5000.0):
        for s in ("env", "deps", "configure", "build", "bindings", "tests", "peer_eager", "peer_compile",
                  "bench_b32", "bench_b256", "bench_unfused_b256", "bench_decode", "profile"):
            self.stage(s)
        self.stage("build_result", note="HSM_CUDA_FAST=ON HSM_CUDA_KERNELS=ON HSM_BUILD_TESTS=ON")
        for seed, loss in enumerate(cuda_losses, 1):
            self.stage("train_hsm_ab_s%d" % seed)
            self.stage("eval_hsm_ab_s%d_cuda" % seed)
            self.result("train_hsm_ab_s%d.out" % seed, {"val_loss": loss, "steps": 400, "total_steps": 400})
        self.stage("train_gpt_s1")
        self.result("train_gpt_s1.out", {"val_loss": 3.9, "steps": 400, "total_steps": 400})
        self.stage("train_cpu_seeds")
        for seed, loss in enumerate(cpu_losses, 1):
            self.result("train_cpu_hsm_ab_s%d.out" % seed, {"val_loss": loss, "steps": 400, "total_steps": 400})
        # hsm 2.0M tokens/s at 256 and 1.0M at 32 for every model; the peers' rates give the ratios asked for
        peer_rows = []
        for batch, hsm_rate, ratios in ((256, 2.0e6, eager_256), (32, 1.0e6, eager_32)):
            self.result("bench_b%d.json" % batch, {
                "peak_kind": "bf16 matmul", "sgemm_peak_gflops": 790000.0, "cuda_kernels": "fused CUDA kernels: on",
                "cuda_kernel_checks": checks,
                "models": [{"name": m, "batch": batch, "train_tokens_per_s": hsm_rate, "mfu": 0.2,
                            "train_cuda_graph": True} for m in MODELS]})
            peer_rows += [{"model": m, "batch": batch, "train_tokens_per_s": hsm_rate / r} for m, r in zip(MODELS, ratios)]
        with open(os.path.join(self.results, "peer_eager.jsonl"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in peer_rows)
        with open(os.path.join(self.results, "peer_compile.jsonl"), "w") as f:
            f.writelines(json.dumps({"model": m, "batch": 256, "train_tokens_per_s": 2.0e6 / r}) + "\n"
                         for m, r in zip(("hsm_ab", "gpt"), compiled_256))
        self.result("bench_decode.json", {"models": [
            {"name": m, "decode_graph_tokens_per_s": graph_decode, "decode_uncached_tokens_per_s": 1000.0,
             "graph_vs_uncached": graph_decode / 1000.0} for m in MODELS]})
        story = {"tokens": list(range(200)), "seconds": 0.2, "first_token_seconds": 0.1, "tokens_per_s": 1000.0,
                 "decoder": "cuda-graph"}
        for mode, rate in (("cached", 1000.0), ("uncached", 250.0)):
            self.stage("generate_cuda_" + mode)
            self.result("generate_cuda_%s.json" % mode, {"samples": [dict(story, tokens_per_s=rate),
                                                                    dict(story, tokens_per_s=rate * 2)]})

    def report(self, device="cuda"):
        subprocess.run([sys.executable, SCRIPT, self.out, "--device", device, "--budget", "400"], check=True,
                       capture_output=True, text=True)
        with open(os.path.join(self.out, "gpu_check.json")) as f:
            return json.load(f)

    def test_every_goal_met(self):
        self.write_run()
        r = self.report()
        g = r["issue_goals"]
        self.assertIs(g["all_met"], True, json.dumps(g, indent=1))
        self.assertEqual(g["goals"]["train_256_vs_eager"]["value"], {"gpt": 1.6, "hsm_ab": 1.7, "hybrid_0_6": 1.8})
        self.assertEqual(g["goals"]["train_256_vs_compiled"]["value"], {"hsm_ab": 1.1, "gpt": 1.2})
        self.assertEqual(g["goals"]["no_crash"]["value"]["runs"], 17)
        self.assertEqual(g["goals"]["fused_kernels_checked"]["value"], ["gelu passed on cuda:0",
                                                                        "norm passed on cuda:0"])
        self.assertEqual(g["goals"]["generate_cached_vs_uncached"]["value"],
                         {"first_story": 4.0, "second_story": 4.0})
        # the report itself: the rows the goals were read from
        row = next(s for s in r["speed"] if s["model"] == "hsm_ab" and s["batch"] == 256)
        self.assertAlmostEqual(row["hsm_vs_eager"], 1.7)
        self.assertEqual(r["hsm_ab_val_loss_cpu"]["seeds"], 4)

    def test_one_model_short_of_a_ratio_misses_that_goal(self):
        self.write_run(eager_256=(1.6, 1.49, 1.8), compiled_256=(0.99, 1.2))
        g = self.report()["issue_goals"]
        self.assertIs(g["all_met"], False)
        self.assertEqual(g["unmet"], ["train_256_vs_eager", "train_256_vs_compiled"])
        self.assertEqual(g["goals"]["train_256_vs_eager"]["value"]["hsm_ab"], 1.49)

    def test_a_failed_evaluation_or_an_unfinished_training_is_a_crash_goal_missed(self):
        self.write_run()
        self.stage("eval_hsm_ab_s3_cuda", "failed", note="exit 139: Segmentation fault")
        g = self.report()["issue_goals"]["goals"]["no_crash"]
        self.assertIs(g["met"], False)
        self.assertEqual(g["value"]["failed"], {"eval_hsm_ab_s3_cuda": "exit 139: Segmentation fault"})
        self.stage("eval_hsm_ab_s3_cuda")
        self.stage("train_hsm_ab_s2", "timeout", note="killed after 90s")
        g = self.report()["issue_goals"]["goals"]["no_crash"]
        self.assertIs(g["met"], False)
        self.assertEqual(g["value"]["trainings_not_finished"], {"train_hsm_ab_s2": "timeout"})
        # the CPU seeds' stage stopped at its limit is not a crash of a CUDA training
        self.stage("train_hsm_ab_s2")
        self.stage("train_cpu_seeds", "timeout")
        self.assertIs(self.report()["issue_goals"]["goals"]["no_crash"]["met"], True)

    def test_loss_outside_the_cpu_spread_and_the_recorded_spread(self):
        self.write_run(cuda_losses=(3.85, 3.90, 3.95, 4.00))
        g = self.report()["issue_goals"]["goals"]["loss_within_cpu_spread"]
        self.assertIs(g["met"], False)
        self.assertEqual((g["value"]["cpu_min"], g["value"]["cpu_max"]), (3.60, 3.80))
        for name in os.listdir(self.results):  # --no-cpu-seeds: the spread recorded in the script
            if name.startswith("train_cpu_"):
                os.remove(os.path.join(self.results, name))
        g = self.report()["issue_goals"]["goals"]["loss_within_cpu_spread"]
        self.assertIs(g["met"], False)
        self.assertEqual((g["value"]["cpu_min"], g["value"]["cpu_max"]), (3.605, 3.772))
        self.assertIn("recorded", g["value"]["cpu_source"])

    def test_a_kernel_family_that_disagreed_is_named(self):
        self.write_run(checks="norm passed on cuda:0, gelu disagreed on cuda:0 (off by 3.1x the tolerance)")
        g = self.report()["issue_goals"]
        self.assertIs(g["goals"]["fused_kernels_checked"]["met"], False)
        self.assertIn("gelu disagreed on cuda:0 (off by 3.1x the tolerance)", g["goals"]["fused_kernels_checked"]["value"])
        self.assertIs(g["all_met"], True)  # a family off is shown, not a goal of its own: the speed says what it cost

    def test_slow_decoding_misses_both_decoding_goals(self):
        self.write_run(graph_decode=2900.0)
        g = self.report()["issue_goals"]
        self.assertEqual(g["unmet"], ["decode_hsm_ab_tokens_per_s", "decode_cached_vs_uncached"])

    def test_a_folder_not_written_by_gpu_check_is_refused_and_left_alone(self):
        other = tempfile.mkdtemp(prefix="gpu_report_other.")
        try:
            done = subprocess.run([sys.executable, SCRIPT, other, "--device", "cuda"], capture_output=True, text=True)
            self.assertNotEqual(done.returncode, 0)
            self.assertIn("not an output folder of bench/gpu_check.sh", done.stderr)
            self.assertEqual(os.listdir(other), [])
        finally:
            shutil.rmtree(other)

    def test_a_link_in_the_folder_is_replaced_never_written_through(self):
        # Issue 65: the report was written through OUT/gpu_check.json.tmp, so a link planted there
        # overwrote the file it pointed to, outside OUT. A link at gpu_check.json itself is replaced.
        self.write_run()
        outside = tempfile.mkdtemp(prefix="gpu_report_outside.")
        try:
            for name in ("gpu_check.json.tmp", "gpu_check.json"):
                target = os.path.join(outside, name + ".precious")
                with open(target, "w") as f:
                    f.write("keep me\n")
                os.symlink(target, os.path.join(self.out, name))
            g = self.report()["issue_goals"]
            self.assertIs(g["all_met"], True)
            for name in ("gpu_check.json.tmp", "gpu_check.json"):
                with open(os.path.join(outside, name + ".precious")) as f:
                    self.assertEqual(f.read(), "keep me\n", name)
            self.assertFalse(os.path.islink(os.path.join(self.out, "gpu_check.json")))
            # nothing of its own left beside the report
            self.assertEqual(sorted(n for n in os.listdir(self.out) if n.endswith(".tmp")), ["gpu_check.json.tmp"])
        finally:
            shutil.rmtree(outside)

    def test_a_cpu_run_measures_no_goal_of_cuda(self):
        self.write_run()
        g = self.report(device="cpu")["issue_goals"]
        self.assertIsNone(g["all_met"])
        self.assertEqual(g["unmet"], [])
        self.assertIn("train_256_vs_eager", g["unmeasured"])
        self.assertIn("cuda_tests", g["unmeasured"])
        self.assertIs(g["goals"]["no_crash"]["met"], True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
