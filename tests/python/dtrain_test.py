#!/usr/bin/env python3
"""The dtrain Python module against the dtrain command: the same rows, profiles, records,
explanations and error messages. CTest sets PYTHONPATH to the module's build folder and
DTRAIN_BINARY to the command (tests/python/tests.cmake)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import unittest

import dtrain

BINARY = os.environ.get("DTRAIN_BINARY", "")
FASHION_MNIST = pathlib.Path("/usr/share/datasets/fashion-mnist")
PROFILE = "8xp100-nvlink+eth-50g"


def command(*args):
    """The dtrain command's exit code, stdout and stderr."""
    if not BINARY:
        raise unittest.SkipTest("DTRAIN_BINARY is not set (CTest sets it to the dtrain command)")
    r = subprocess.run([BINARY, *args], capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def command_error(*args):
    """The message of the command's error ("dtrain: error: MESSAGE" on stderr)."""
    code, _, err = command(*args)
    prefix = "dtrain: error: "
    assert code != 0 and prefix in err, f"dtrain {' '.join(args)}: exit code {code}, stderr {err!r}"
    return err[err.index(prefix) + len(prefix):].rstrip("\n")


class Predict(unittest.TestCase):
    def compare_with_command(self, module_kwargs, flags):
        code, out, err = command("predict", *flags, "--json")
        self.assertEqual(code, 0, err)
        expected = json.loads(out)
        got = dtrain.predict(**module_kwargs)
        self.assertIsInstance(got, list)
        self.assertEqual(got.to_dict(), expected)
        self.assertEqual(len(got), len(expected["runs"]))
        for row, run in zip(got, expected["runs"]):
            self.assertEqual(sorted(row.keys()), sorted(run.keys()))
            for field, value in run.items():
                self.assertEqual(getattr(row, field), value, field)
                self.assertEqual(row[field], value, field)
            self.assertEqual(row.to_dict(), run)
        for name in ("best", "model", "parameters", "dataset", "profile"):
            self.assertEqual(getattr(got, name), expected[name], name)
        return got

    def test_rows_are_the_commands_json(self):
        got = self.compare_with_command(
            dict(model="resnet50", workers=[1, 8, 64], profile=PROFILE, allreduce=["ring", "tree"]),
            ["--model", "resnet50", "--workers", "1,8,64", "--profile", PROFILE, "--allreduce", "ring,tree"])
        self.assertEqual([(r.workers, r.exchange) for r in got], [(1, "ring"), (8, "ring"), (8, "tree"),
                                                                  (64, "ring"), (64, "tree")])
        self.assertIn("workers  exchange", got.table)
        self.assertTrue(repr(got[1]).startswith("Row(workers=8, exchange='ring', "), repr(got[1]))

    def test_every_option_reaches_the_model(self):
        self.compare_with_command(
            dict(model="resnet20", dataset="cifar10", workers="2,4", batch_per_worker=64, profile="2xskylake-sp-upi+eth-10g",
                 allreduce="butterfly", comm_dtype="f16", bucket_mb=4, double_buffering=True, accumulate=2,
                 hierarchical=True, epochs=3),
            ["--model", "resnet20", "--dataset", "cifar10", "--workers", "2,4", "--batch-per-worker", "64",
             "--profile", "2xskylake-sp-upi+eth-10g", "--allreduce", "butterfly", "--comm-dtype", "f16",
             "--bucket-mb", "4", "--double-buffering", "--accumulate", "2", "--hierarchical", "--epochs", "3"])
        # ssp without --allreduce: the parameter server, as the command chooses.
        self.compare_with_command(dict(model="lenet", dataset="fashion-mnist", workers=[4], profile="p100+ib-fdr",
                                       sync="ssp", servers=2),
                                  ["--model", "lenet", "--dataset", "fashion-mnist", "--workers", "4",
                                   "--profile", "p100+ib-fdr", "--sync", "ssp", "--servers", "2"])

    def test_a_profile_object_predicts_as_its_spec(self):
        by_spec = dtrain.predict(model="resnet50", workers=[8, 64], profile=PROFILE)
        by_object = dtrain.predict(model="resnet50", workers=[8, 64], profile=dtrain.Profile.compose(PROFILE))
        self.assertEqual(by_object, by_spec)
        self.assertEqual(by_object.to_dict(), by_spec.to_dict())

    def test_errors_are_the_commands(self):
        cases = [
            (dict(model="vgg", profile=PROFILE), ["--model", "vgg", "--profile", PROFILE]),
            (dict(model="resnet50"), ["--model", "resnet50"]),
            (dict(workers=[0], profile=PROFILE), ["--workers", "0", "--profile", PROFILE]),
            (dict(workers="8,x", profile=PROFILE), ["--workers", "8,x", "--profile", PROFILE]),
            (dict(allreduce=["ring", "ringg"], profile=PROFILE), ["--allreduce", "ring,ringg", "--profile", PROFILE]),
            (dict(profile="p100+nosuch"), ["--profile", "p100+nosuch"]),
        ]
        for kwargs, flags in cases:
            with self.subTest(flags=flags):
                with self.assertRaises(dtrain.InputError) as caught:
                    dtrain.predict(**kwargs)
                self.assertEqual(str(caught.exception), command_error("predict", *flags))
                self.assertIsInstance(caught.exception, ValueError)
                self.assertIsInstance(caught.exception, dtrain.Error)
                self.assertIsInstance(caught.exception, RuntimeError)

    def test_a_missing_field_is_an_attribute_error(self):
        row = dtrain.predict(model="mlp", dataset="fashion-mnist", workers=[2], profile=PROFILE)[0]
        with self.assertRaises(AttributeError):
            row.no_such_field


class Profiles(unittest.TestCase):
    def test_compose_and_builtin_names(self):
        names = dtrain.Profile.builtin_names()
        self.assertIn("p100", names["devices"])
        self.assertIn("nvlink1", names["links"])
        self.assertIn("eth-50g", names["networks"])
        p = dtrain.Profile.compose(PROFILE)
        self.assertEqual(p.name, PROFILE)
        self.assertEqual(p.accelerators, 8)
        self.assertTrue(p.intra_link)
        self.assertIsNotNone(p.network)
        self.assertIsNone(dtrain.Profile.compose("p100").network)
        self.assertEqual(p.to_json()["node"]["accelerators"], 8)
        self.assertIn(PROFILE, str(p))

    def test_save_and_load_round_trip(self):
        with tempfile.TemporaryDirectory() as d:
            path = pathlib.Path(d) / "saved.json"
            original = dtrain.Profile.compose(PROFILE)
            original.save(path)
            loaded = dtrain.Profile.load(path)
            self.assertEqual(loaded.name, str(path))
            self.assertEqual(loaded.to_json()["device"], original.to_json()["device"])
            self.assertEqual(loaded.to_json()["node"], original.to_json()["node"])
            # The file predicts as the command reads it with --profile.
            code, out, err = command("predict", "--model", "resnet50", "--workers", "8,64", "--profile", str(path),
                                     "--json")
            self.assertEqual(code, 0, err)
            self.assertEqual(dtrain.predict(model="resnet50", workers=[8, 64], profile=loaded).to_dict()["runs"],
                             json.loads(out)["runs"])

    def test_errors(self):
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.Profile.compose("nosuch")
        self.assertEqual(str(caught.exception), command_error("predict", "--profile", "nosuch"))
        with self.assertRaises(dtrain.Error) as caught:
            dtrain.Profile.load("/nonexistent/profile.json")
        self.assertIn("/nonexistent/profile.json", str(caught.exception))
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.Profile.calibrate(models=["vgg"])
        self.assertEqual(str(caught.exception), command_error("calibrate", "--models", "vgg", "-o", os.devnull))

    def test_calibrate_this_machine(self):
        p = dtrain.Profile.calibrate(models=["mlp"], min_seconds=0.01, rounds=1, name="here")
        self.assertEqual(p.name, "here")
        self.assertEqual(p.accelerators, 1)
        rows = dtrain.predict(model="mlp", dataset="fashion-mnist", workers=[1], batch_per_worker=64, profile=p)
        self.assertGreater(rows[0].step_s, 0)


@unittest.skipUnless(FASHION_MNIST.is_dir(), f"{FASHION_MNIST} is missing (Debian package dataset-fashion-mnist)")
class TrainAndExplain(unittest.TestCase):
    FLAGS = dict(model="mlp", epochs=1, batch=64, limit=256, eval_limit=200, threads=1)

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.log = os.path.join(cls.dir.name, "run.jsonl")
        cls.records = dtrain.train(log=cls.log, **cls.FLAGS)

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_records_of_the_run(self):
        self.assertEqual([r["type"] for r in self.records], ["config", "epoch"])
        config, epoch = self.records
        self.assertEqual((config["model"], config["epochs"], config["limit"], config["threads"]), ("mlp", 1, 256, 1))
        self.assertEqual(epoch["epoch"], 1)
        self.assertEqual(epoch["test_samples"], 200)
        with open(self.log) as f:
            self.assertEqual([json.loads(line) for line in f], self.records)

    def test_without_a_log_the_temporary_one_is_removed(self):
        before = set(pathlib.Path(tempfile.gettempdir()).glob("dtrain-train-*"))
        records = dtrain.train(**dict(self.FLAGS, limit=64, eval_limit=64))
        self.assertEqual([r["type"] for r in records], ["config", "epoch"])
        self.assertEqual(set(pathlib.Path(tempfile.gettempdir()).glob("dtrain-train-*")), before)
        # log='': no log written (in the working folder or anywhere), no records.
        with tempfile.TemporaryDirectory() as d:
            cwd = os.getcwd()
            os.chdir(d)
            try:
                self.assertEqual(dtrain.train(log="", **dict(self.FLAGS, limit=64, eval_limit=64)), [])
            finally:
                os.chdir(cwd)
            self.assertEqual(os.listdir(d), [])

    def test_errors_are_the_commands(self):
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.train(model="vgg", limit=64)
        self.assertEqual(str(caught.exception), command_error("train", "--model", "vgg", "--limit", "64"))
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.train(epochs=0)
        self.assertIn("--epochs", str(caught.exception))
        self.assertIn(str(caught.exception), command("train", "--epochs", "0")[2])
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.train(no_such_flag=1)
        self.assertIn("--no-such-flag", str(caught.exception))

    def test_explain_is_the_commands(self):
        e = dtrain.explain(self.log)
        code, out, err = command("explain", self.log, "--json")
        self.assertEqual(code, 0, err)
        fields = e.to_dict()
        text = fields.pop("text")
        self.assertEqual(fields, json.loads(out))
        self.assertEqual(text, command("explain", self.log)[1])
        self.assertEqual(str(e), text)
        self.assertEqual(e.limit, fields["limit"])
        with_model = dtrain.explain(self.log, profile="skylake-sp")
        self.assertEqual(with_model.profile, "skylake-sp")
        self.assertGreater(with_model.predicted_step_s, 0)

    def test_explain_errors(self):
        with self.assertRaises(dtrain.InputError) as caught:
            dtrain.explain(os.path.join(self.dir.name, "missing.jsonl"))
        self.assertEqual(str(caught.exception),
                         command_error("explain", os.path.join(self.dir.name, "missing.jsonl")))


class Interpreters(unittest.TestCase):
    def test_the_python3_on_the_path_imports_it_too(self):
        other = shutil.which("python3")
        if other is None or os.path.realpath(other) == os.path.realpath(sys.executable):
            self.skipTest("no other python3 on the PATH")
        version = subprocess.run([other, "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                                 text=True).stdout.strip()
        if version != str(sys.version_info[:2]):
            self.skipTest(f"{other} is Python {version}, the module is built for {sys.version_info[:2]}")
        r = subprocess.run([other, "-c", "import dtrain; print(dtrain.predict(model='resnet50', workers=[8], "
                                         f"profile='{PROFILE}')[0].exchange)"], capture_output=True, text=True)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "ring"), r.stderr)


if __name__ == "__main__":
    unittest.main()
