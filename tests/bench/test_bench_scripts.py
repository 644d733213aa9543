#!/usr/bin/env python3
"""The scripts of bench/, packaging/ and fuzz/ in a careless user's hands (issue 65): a script removes or
replaces only what it can prove it made (a marker it wrote in its folder), never a user's files, and an
option with no value, an empty one or an odd one is refused in one line before anything is written.

    python3 tests/bench/test_bench_scripts.py SOURCE_ROOT

bench/gpu_check.sh runs here whole with --budget 0 --device cpu: every stage is then skipped and the
report is written, in under a second.
"""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", ".."))


def script(*parts):
    return os.path.join(ROOT, *parts)


class Sandbox(unittest.TestCase):
    """A private folder per test (TMPDIR too: what a script leaves in its temporary folder shows)."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="hsm_bench_scripts.")
        self.tmp = os.path.join(self.dir, "tmp")
        os.mkdir(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, rel, text="mine\n"):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def run_script(self, args, env=None, cwd=ROOT):
        e = dict(os.environ, TMPDIR=self.tmp)
        e.pop("OUT", None)
        e.update(env or {})
        return subprocess.run(["bash"] + args, cwd=cwd, env=e, capture_output=True, text=True, timeout=120)

    def refused(self, done, *words):
        """Refused in one line that holds every one of WORDS, exit 2, nothing on stdout."""
        self.assertEqual(done.returncode, 2, done.stdout + done.stderr)
        lines = done.stderr.splitlines()
        self.assertEqual(len(lines), 1, done.stderr)
        self.assertNotIn("unbound variable", done.stderr)
        for w in words:
            self.assertIn(w, lines[0])
        self.assertEqual(done.stdout, "")

    def stub(self, name, body):
        bin_dir = self.path("bin")
        os.makedirs(bin_dir, exist_ok=True)
        p = os.path.join(bin_dir, name)
        with open(p, "w") as f:
            f.write("#!/bin/bash\n" + body)
        os.chmod(p, os.stat(p).st_mode | stat.S_IXUSR)
        return bin_dir

    def files(self, root):
        found = {}
        for d, _, names in os.walk(root):
            for n in names:
                p = os.path.join(d, n)
                with open(p) as f:
                    found[os.path.relpath(p, root)] = f.read()
        return found


class GpuCheck(Sandbox):
    SCRIPT = script("bench", "gpu_check.sh")

    def check(self, *args):
        return self.run_script([self.SCRIPT, "--budget", "0", "--device", "cpu", "--no-cpu-seeds"] + list(args))

    def test_a_users_folder_with_a_file_named_like_the_report_is_refused_and_left_alone(self):
        # The old script took any gpu_check.json as its own and ran rm -rf on logs/, results/, status/.
        out = self.path("mine")
        for rel in ("mine/gpu_check.json", "mine/results/exp1.csv", "mine/logs/day1.txt", "mine/status/today"):
            self.write(rel)
        before = self.files(out)
        self.refused(self.check("--out", out), "'%s' is not empty and was not made by this script" % out)
        self.assertEqual(self.files(out), before)

    def test_an_empty_or_missing_or_odd_out_is_refused_in_one_line(self):
        self.refused(self.check("--out"), "--out needs a value")
        self.refused(self.check("--out", ""), "--out is empty")
        self.refused(self.check("--out", "--quick"), "--out needs a value, not the option '--quick'")
        self.refused(self.check("--out", "a\nb"), "control character")
        self.refused(self.check("--out", "/"), "the root folder")
        self.refused(self.check("--out", "/./"), "the root folder")
        self.assertEqual(os.listdir(self.dir), ["tmp"])
        for option in ("--debs", "--data", "--budget", "--jobs", "--build", "--torch-dir", "--device"):
            self.refused(self.run_script([self.SCRIPT, option]), option + " needs a value")
        self.refused(self.check("--out", self.path("o"), "--jobs", "0"), "--jobs is a whole number")
        self.refused(self.check("--out", self.path("o"), "--device", "gpu"), "--device is cuda or cpu")

    def test_a_file_or_a_link_as_out_is_refused(self):
        self.write("notes.txt")
        self.refused(self.check("--out", self.path("notes.txt")), "is not a folder")
        os.mkdir(self.path("elsewhere"))
        os.symlink(self.path("elsewhere"), self.path("link"))
        self.refused(self.check("--out", self.path("link")), "is not a folder")
        self.assertEqual(os.listdir(self.path("elsewhere")), [])

    def test_its_own_folder_has_the_report_replaced_and_nothing_else(self):
        out = self.path("report")
        done = self.check("--out", out)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertTrue(os.path.isfile(os.path.join(out, ".hsm_gpu_check")))
        self.assertTrue(os.path.isfile(os.path.join(out, "gpu_check.json")))
        self.write("report/results/stale.txt", "from the first run\n")
        self.write("report/my-notes.txt", "the user's\n")
        done = self.check("--out", out)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertFalse(os.path.exists(os.path.join(out, "results", "stale.txt")))
        self.assertEqual(self.files(out)["my-notes.txt"], "the user's\n")
        self.assertTrue(os.path.isfile(os.path.join(out, "gpu_check.json")))
        # its build, .debs and runs lived in a folder of its own under TMPDIR, removed at the end
        self.assertEqual(os.listdir(self.tmp), [])

    def test_an_empty_folder_is_taken(self):
        os.mkdir(self.path("empty"))
        done = self.check("--out", self.path("empty"))
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertTrue(os.path.isfile(self.path("empty", "gpu_check.json")))


class GpuProfile(Sandbox):
    SCRIPT = script("bench", "gpu_profile.sh")

    def test_options_with_no_value_or_an_odd_one_are_refused_in_one_line(self):
        self.refused(self.run_script([self.SCRIPT, "--out"]), "--out needs a value")
        self.refused(self.run_script([self.SCRIPT, "--out", ""]), "--out is empty")
        self.refused(self.run_script([self.SCRIPT, "--out", "-x"]), "--out needs a value, not the option '-x'")
        for option in ("--batch", "--models", "--compiled", "--debs", "--build", "--jobs", "--ab"):
            self.refused(self.run_script([self.SCRIPT, option]), option + " needs a value")
        self.refused(self.run_script([self.SCRIPT, "--out", "/"]), "the root folder")
        self.write("mine/results.csv")
        self.refused(self.run_script([self.SCRIPT, "--out", self.path("mine")]), "was not made by this script")
        self.assertEqual(os.listdir(self.path("mine")), ["results.csv"])

    def test_it_builds_in_a_private_folder_and_removes_it(self):
        # The old script built in a fixed ${TMPDIR:-/tmp}/hsm_gpu_profile_build, shared by every user
        # and never removed. Here cmake is a stub that records its build folder and fails.
        record = self.path("cmake-args")
        bin_dir = self.stub("cmake", 'printf "%%s\\n" "$@" >> "%s"; exit 1\n' % record)
        self.stub("python3", 'echo /nonexistent/share/cmake/Torch\n')
        self.stub("pkg-config", 'exit 0\n')
        for header in ("/usr/include/nlohmann", "/usr/include/CLI"):
            if not os.path.isdir(header):
                self.skipTest("%s is missing: the script would unpack .debs first" % header)
        done = self.run_script([self.SCRIPT, "--out", self.path("prof")],
                               env={"PATH": bin_dir + os.pathsep + os.environ["PATH"]})
        self.assertEqual(done.returncode, 1, done.stdout + done.stderr)
        with open(record) as f:
            args = f.read().splitlines()
        build = args[args.index("-B") + 1]
        self.assertEqual(os.path.basename(build), "build")
        self.assertTrue(os.path.basename(os.path.dirname(build)).startswith("hsm_gpu_profile."), build)
        self.assertEqual(os.path.dirname(os.path.dirname(build)), self.tmp)
        self.assertEqual(os.listdir(self.tmp), [])  # removed as it ended


class GpuDebs(Sandbox):
    SCRIPT = script("bench", "gpu_debs.sh")

    def test_options_with_no_value_or_an_odd_one_are_refused_in_one_line(self):
        self.refused(self.run_script([self.SCRIPT, "--out"]), "--out needs a value")
        self.refused(self.run_script([self.SCRIPT, "--out", ""]), "--out is empty")
        self.refused(self.run_script([self.SCRIPT, "--out", "--data"]), "--out needs a value, not the option '--data'")
        self.refused(self.run_script([self.SCRIPT, "--data"]), "--data needs a value")
        corpus = self.write("corpus.txt")
        self.refused(self.run_script([self.SCRIPT, "--data", corpus, "--out", "/"]), "the root folder")
        self.refused(self.run_script([self.SCRIPT, "--data", corpus, "--out", corpus]), "is not a folder")

    def test_a_users_folder_is_refused_and_left_alone(self):
        self.write("mine/keep.deb")
        done = self.run_script([self.SCRIPT, "--out", self.path("mine"), "--data", self.write("corpus.txt")])
        self.refused(done, "'%s' is not empty and was not made by this script" % self.path("mine"))
        self.assertEqual(self.files(self.path("mine")), {"keep.deb": "mine\n"})


class PackageTest(Sandbox):
    SCRIPT = script("packaging", "package-test.sh")

    def test_odd_arguments_are_refused_in_one_line_before_anything_is_installed(self):
        self.refused(self.run_script([self.SCRIPT, ""]), "the build folder is empty")
        self.refused(self.run_script([self.SCRIPT, "--out"]), "unknown option '--out'")
        self.refused(self.run_script([self.SCRIPT, "a", "b"]), "one argument")
        self.refused(self.run_script([self.SCRIPT, self.path("none")]), "no build folder")


class Fuzz(Sandbox):
    SCRIPT = script("fuzz", "run.sh")

    def test_a_users_folder_as_the_build_folder_is_refused_and_left_alone(self):
        self.write("mine/logs/safetensors.log", "my log\n")
        # (a compiler and cmake that fail at once: a script that went on would not build for minutes)
        for tool in ("clang", "clang++", "cmake"):
            bin_dir = self.stub(tool, "exit 1\n")
        path = bin_dir + os.pathsep + os.environ["PATH"]
        done = self.run_script([self.SCRIPT, "safetensors"], env={"FUZZ_BUILD_DIR": self.path("mine"), "PATH": path})
        self.refused(done, "'%s' is not empty and not a build folder of this script's" % self.path("mine"))
        self.assertEqual(self.files(self.path("mine")), {"logs/safetensors.log": "my log\n"})
        self.write("file")
        self.refused(self.run_script([self.SCRIPT, "safetensors"], env={"FUZZ_BUILD_DIR": self.path("file"), "PATH": path}),
                     "is not a folder")


if __name__ == "__main__":
    unittest.main(verbosity=2)
