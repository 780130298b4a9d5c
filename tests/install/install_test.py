#!/usr/bin/env python3
"""dtrain installed into a prefix and used from there, as a user of it would.

usage: install_test.py BUILD_DIR SOURCE_DIR [PYTHON_MODULE_BUILT]

Installs BUILD_DIR into a fresh prefix, then: the installed `dtrain` command finds the
profiles of its own prefix (from any working directory, with DTRAIN_PROFILES unset); the
out-of-tree example examples/consumer configures with find_package(dtrain) against the prefix,
builds and runs; the same program builds with the flags of the installed pkg-config file; and,
when the Python module was built (PYTHON_MODULE_BUILT = 1), `import dtrain` works from the
prefix's lib/python3/dist-packages.
"""
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD = pathlib.Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else None
SOURCE = pathlib.Path(sys.argv[2]).resolve() if len(sys.argv) > 2 else None
PYTHON_MODULE_BUILT = len(sys.argv) > 3 and sys.argv[3] == "1"


def run(cmd, cwd=None, env=None, timeout=240):
    """Runs cmd; fails the test with its output when it exits non-zero."""
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, cmd))} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
    return r.stdout


def clean_env():
    env = dict(os.environ)
    env.pop("DTRAIN_PROFILES", None)
    env.pop("PYTHONPATH", None)
    return env


class Installed(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="dtrain-install-"))
        cls.prefix = cls.tmp / "p"
        run(["cmake", "--install", str(BUILD), "--prefix", str(cls.prefix)])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def libdir(self):
        # GNUInstallDirs: lib, or lib64 / lib/<triplet> on some systems.
        found = sorted(self.prefix.glob("**/libdtrain.a"))
        self.assertTrue(found, "libdtrain.a was not installed")
        return found[0].parent

    def test_the_prefix_holds_the_command_library_headers_profiles_and_packages(self):
        lib = self.libdir()
        for path in [self.prefix / "bin/dtrain", lib / "libdtrain.a",
                     self.prefix / "include/dtrain/core/error.h", self.prefix / "include/dtrain/perfmodel/profile.h",
                     self.prefix / "include/dtrain/calibration/calibration.h",
                     self.prefix / "share/dtrain/profiles/devices",
                     lib / "cmake/dtrain/dtrainConfig.cmake", lib / "cmake/dtrain/dtrainConfigVersion.cmake",
                     lib / "cmake/dtrain/dtrainTargets.cmake", lib / "pkgconfig/dtrain.pc"]:
            self.assertTrue(path.exists(), f"{path} was not installed")

    def test_the_installed_command_finds_the_profiles_of_its_prefix(self):
        out = run([self.prefix / "bin/dtrain", "predict", "--list-profiles"], cwd=self.tmp, env=clean_env())
        self.assertIn(str(self.prefix / "share/dtrain/profiles"), out)
        out = run([self.prefix / "bin/dtrain", "predict", "--model", "resnet50", "--workers", "8,64",
                   "--profile", "8xp100-nvlink+eth-50g"], cwd=self.tmp, env=clean_env())
        self.assertIn("resnet50", out)
        self.assertIn("efficiency", out)
        self.assertIn("     64  ring", out)

    def test_an_out_of_tree_project_finds_the_package_builds_and_runs(self):
        build = self.tmp / "consumer-cmake"
        run(["cmake", "-S", SOURCE / "examples/consumer", "-B", build, "-G", "Ninja",
             f"-DCMAKE_PREFIX_PATH={self.prefix}", "-DCMAKE_BUILD_TYPE=Release"], env=clean_env())
        run(["cmake", "--build", build], env=clean_env())
        out = run([build / "consumer"], cwd=self.tmp, env=clean_env())
        self.assertIn("loss:", out)
        self.assertIn("predicted step on 8 worker(s)", out)

    def test_the_pkg_config_file_builds_the_same_program(self):
        env = clean_env()
        env["PKG_CONFIG_PATH"] = str(self.libdir() / "pkgconfig")
        self.assertEqual(run(["pkg-config", "--modversion", "dtrain"], env=env).strip(), "0.1.0")
        flags = run(["pkg-config", "--cflags", "--libs", "dtrain"], env=env).split()
        profiles = run(["pkg-config", "--variable=profilesdir", "dtrain"], env=env).strip()
        self.assertTrue(pathlib.Path(profiles, "devices").is_dir(), profiles)
        exe = self.tmp / "consumer-pkgconfig"
        cxx = os.environ.get("CXX", "c++")
        run([cxx, "-O1", f'-DDTRAIN_PROFILES_DIR="{profiles}"', SOURCE / "examples/consumer/consumer.cpp",
             "-o", exe] + flags, env=env)
        self.assertIn("predicted step on 8 worker(s)", run([exe], cwd=self.tmp, env=clean_env()))

    @unittest.skipUnless(PYTHON_MODULE_BUILT, "the Python module was not built")
    def test_the_python_module_imports_from_the_prefix(self):
        env = clean_env()
        env["PYTHONPATH"] = str(self.prefix / "lib/python3/dist-packages")
        code = ('import dtrain; rows = dtrain.predict(model="resnet50", workers=[8, 64], '
                'profile="8xp100-nvlink+eth-50g"); print(dtrain.__file__); print(len(rows))')
        out = run([sys.executable, "-c", code], cwd=self.tmp, env=env).split()
        self.assertTrue(out[0].startswith(str(self.prefix)), out[0])
        self.assertGreaterEqual(int(out[1]), 2)


if __name__ == "__main__":
    if BUILD is None or SOURCE is None:
        sys.exit(__doc__)
    unittest.main(argv=sys.argv[:1], verbosity=2)
