"""The summaries of bench/validate_model.py on rows whose errors are known: the table per layout and
model, the rows over the target, a row's error over its repetitions, the repeatability of the
measurement, the errors over the rows that repeat, and --summary reprinting a saved grid."""
import contextlib
import importlib.util
import io
import os
import stat
import sys
import tempfile
import types
import unittest
from unittest import mock

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
spec = importlib.util.spec_from_file_location("validate_model", os.path.join(ROOT, "bench", "validate_model.py"))
vm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(vm)


def row(layout, ranks, model, error, meas=(1.0,), algorithm="ring", dtype="f32", db=False):
    return dict(layout=layout, ranks=ranks, model=model, algorithm=algorithm, dtype=dtype, db=db,
                error=error, meas=list(meas))


class Breakdown(unittest.TestCase):
    def test_median_and_largest_per_layout_and_model_then_the_rows_over_the_target_worst_first(self):
        rows = [row("1 process", 1, "mlp", -0.05),
                row("2 ranks, 1 host", 2, "mlp", 0.10), row("2 ranks, 1 host", 2, "mlp", -0.30, algorithm="tree"),
                row("2 ranks, 1 host", 2, "mlp", 0.02, dtype="f16"),
                row("2 ranks, 1 host", 2, "lenet", 0.27, db=True)]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            vm.breakdown(rows)
        lines = out.getvalue().splitlines()
        header = next(i for i, l in enumerate(lines) if l.startswith("layout"))
        self.assertEqual(lines[header].split(), ["layout", "mlp", "lenet"])
        one = lines[header + 1]
        self.assertTrue(one.startswith("1 process"))
        self.assertIn("5.0% /   5.0% (1)", one)
        self.assertIn("-", one.split(")")[-1])  # no lenet row in that layout
        two = lines[header + 2]
        self.assertIn("10.0% /  30.0% (3)", two)  # median of 2%, 10%, 30%
        self.assertIn("27.0% /  27.0% (1)", two)
        over = lines.index("2 rows over 25%, worst first:")
        self.assertRegex(lines[over + 1], r"mlp\s+tree\s+f32\s+-30\.0%$")
        self.assertRegex(lines[over + 2], r"lenet\s+ring\s+f32 db\s+\+27\.0%$")
        self.assertEqual(len(lines), over + 3)

    def test_no_row_over_the_target(self):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            vm.breakdown([row("1 process", 1, "lenet", 0.01)])
        self.assertTrue(out.getvalue().rstrip().endswith("0 rows over 25%"))


class RunErrors(unittest.TestCase):
    def test_each_prediction_against_its_own_run(self):
        # Two repetitions calibrated in the slow state, one in the fast: the median of the
        # repetitions' errors, not the median prediction against the median run (+72.5% here).
        pred, meas = [5.79, 3.14, 5.28], [2.92, 3.06, 4.33]
        errors = vm.run_errors(pred, meas)
        for got, want in zip(errors, [5.79 / 2.92 - 1, 3.14 / 3.06 - 1, 5.28 / 4.33 - 1]):
            self.assertAlmostEqual(got, want)
        self.assertAlmostEqual(vm.bl.median(errors), 5.28 / 4.33 - 1)
        self.assertGreater(vm.bl.median(pred) / vm.bl.median(meas) - 1, 0.7)


class Repeatability(unittest.TestCase):
    def test_each_repetition_against_the_median_of_the_others(self):
        steady = row("1 process", 1, "mlp", 0, meas=(1.0, 1.0, 1.1))
        wide = row("1 process", 1, "lenet", 0, meas=(1.0, 1.3))
        single = row("1 process", 1, "resnet20", 0, meas=(2.0,))
        diffs, spread = vm.repeatability([steady, wide, single])
        expected = [0.05, 0.05, 0.1 / 1.1, 0.3, 0.3 / 1.3]
        self.assertEqual(len(diffs), len(expected))
        for got, want in zip(diffs, expected):
            self.assertAlmostEqual(got, want)
        self.assertEqual(spread, [wide])


class Repeatable(unittest.TestCase):
    def test_rows_measured_twice_or_more_within_the_span(self):
        steady = row("1 process", 1, "mlp", 0.30, meas=(1.0, 1.25, 1.1))  # max/min 1.25: in
        wide = row("1 process", 1, "lenet", 0.01, meas=(1.0, 1.26))
        single = row("1 process", 1, "resnet20", 0.0, meas=(2.0,))
        self.assertEqual(vm.repeatable([steady, wide, single]), [steady])


class Summary(unittest.TestCase):
    """The summaries printed (and written) from rows alone, as `--summary FILE` reprints a grid."""

    def grid(self):
        rows = [row("2 ranks, 1 host", 2, "mlp", 0.05, meas=(2.0, 2.1)),
                row("2 ranks, 1 host", 2, "mlp", -0.30, meas=(2.0, 3.0), algorithm="tree"),
                row("2 ranks, 1 host", 2, "lenet", 0.20, meas=(10.0, 11.0))]
        for r in rows:
            r.update(pred=[m * (1 + r["error"]) for m in r["meas"]], same_state=[True] * len(r["meas"]),
                     predicted_s=1.0, measured_s=1.0)
        return rows

    def test_the_errors_over_all_rows_and_over_the_rows_that_repeat(self):
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(out):
            path = os.path.join(d, "grid.json")
            vm.summarize(self.grid(), path)
            with open(path) as f:
                saved = vm.json.load(f)
        text = out.getvalue()
        self.assertIn("3 rows: median absolute error 20.0% (target <= 10%), maximum 30.0%", text)
        self.assertIn("1 rows' repetitions span more than 25% (max/min > 1.25), 1 of the 1 rows over 25%", text)
        self.assertIn("2 rows whose repetitions agree within 25% (max/min <= 1.25): median absolute error 12.5%, "
                      "maximum 20.0%", text)
        self.assertEqual(saved["repeatable_rows"], {"rows": 2, "median_abs_error": 0.125, "max_abs_error": 0.2})
        self.assertAlmostEqual(saved["max_abs_error"], 0.3)

    def test_summary_flag_reprints_a_saved_grid_and_names_a_bad_file(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "grid.json")
            with open(path, "w") as f:
                vm.json.dump({"rows": self.grid()}, f)
            out = io.StringIO()
            with mock.patch.object(sys, "argv", ["validate_model.py", "--summary", path]), \
                    contextlib.redirect_stdout(out):
                vm.main()
            self.assertIn("maximum 30.0% (target <= 25%)", out.getvalue())
            bad = os.path.join(d, "bad.json")
            with open(bad, "w") as f:
                f.write("{not json")
            with mock.patch.object(sys, "argv", ["validate_model.py", "--summary", bad]), \
                    self.assertRaises(SystemExit) as e:
                vm.main()
            self.assertIn("not a grid that --json wrote", str(e.exception.code))


class CoreState(unittest.TestCase):
    """`dtrain bench cores` takes no sample while both CPUs stay busy (the ranks of the row before
    exiting): the state is then unknown, not a crash of the whole grid."""

    def fake_dtrain(self, d, line):
        path = os.path.join(d, "dtrain")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\necho '{line}'\n")
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)
        return types.SimpleNamespace(dtrain=path)

    def test_a_sample_gives_the_median_and_none_gives_none(self):
        with tempfile.TemporaryDirectory() as d, mock.patch.object(vm.time, "sleep"):
            busy = self.fake_dtrain(d, "cores cpu_a=0 cpu_b=1 samples=0 (both CPUs were busy the whole time)")
            self.assertIsNone(vm.core_state_now(busy))
            ok = self.fake_dtrain(d, "cores cpu_a=0 cpu_b=1 samples=2 min_ns=100 median_ns=440 max_ns=440")
            self.assertAlmostEqual(vm.core_state_now(ok), 440e-9)


class MeasuredSteps(unittest.TestCase):
    def test_every_row_measures_about_its_seconds_within_the_bounds(self):
        a = vm.parse_args([])
        self.assertEqual(vm.measured_steps(a, 4.5e-3), 444)  # mlp on 4 ranks: 2 s, not 200 steps
        self.assertEqual(vm.measured_steps(a, 1e-5), a.max_steps)
        self.assertEqual(vm.measured_steps(a, 0.6), a.min_steps)  # resnet20 on 4 ranks: 12 steps
        self.assertGreaterEqual(a.max_steps * 1e-3, a.seconds)  # a 1 ms row is not cut short


class ModelParallelRows(unittest.TestCase):
    def test_pipelines_on_two_ranks_tensor_parallel_on_every_one_host_layout_and_neither_across_hosts(self):
        a = vm.parse_args(["--ranks", "1,2,4", "--rates", "1gbit", "--models", "mlp,resnet20", "--algorithms", "",
                           "--ps", "", "--pipeline-micro-batches", "1,4"])
        rows = {lay.name: [vm.label(lay, r).split()[-3:] for r in rs] for lay, rs in vm.build_grid(a)}
        self.assertEqual(rows["2 ranks, 1 host"], [["mlp", "pipeline", "m=1"], ["mlp", "pipeline", "m=4"],
                                                   ["resnet20", "pipeline", "m=1"], ["resnet20", "pipeline", "m=4"],
                                                   ["mlp", "tensor", "T=2"]])
        self.assertEqual(rows["4 ranks, 1 host"], [["mlp", "tensor", "T=4"]])
        self.assertEqual(rows["2 hosts x 1, 1gbit"], [])
        a = vm.parse_args(["--ranks", "2", "--rates", "", "--models", "lenet", "--algorithms", "", "--ps", "",
                           "--pipeline-micro-batches", "", "--no-tensor-parallel"])
        self.assertEqual(vm.build_grid(a)[0][1], [])

    def test_a_pipeline_row_is_calibrated_at_its_micro_batch_and_a_tensor_row_on_its_parts(self):
        a = vm.parse_args(["--batch", "64"])
        two, four = vm.Layout(2), vm.Layout(4)
        self.assertEqual(vm.calibration_setting(a, two, dict(model="lenet", algorithm="pipeline", micro=4)), (16, 1))
        self.assertEqual(vm.calibration_setting(a, four, dict(model="lenet", algorithm="tensor")), (64, 4))
        self.assertEqual(vm.calibration_setting(a, four, dict(model="lenet", algorithm="ring")), (64, 1))


class ParameterServerRows(unittest.TestCase):
    def test_every_rule_and_shard_count_that_leaves_a_worker_and_stragglers_only_beside_another_worker(self):
        a = vm.parse_args(["--ranks", "2,4", "--rates", "", "--models", "lenet", "--algorithms", "ring",
                           "--dtypes", "f32", "--db", "no"])
        rows = {lay.ranks: [r for r in rs if r["algorithm"] == "ps"] for lay, rs in vm.build_grid(a)}
        # 2 ranks: K = 1 leaves one worker (no straggler row); K = 2 leaves none.
        self.assertEqual([(r["sync"], r["servers"], r["workers"], r["straggler"]) for r in rows[2]],
                         [("bsp", 1, 1, "none"), ("ssp", 1, 1, "none"), ("asp", 1, 1, "none")])
        self.assertEqual(len(rows[4]), 3 * 2 * 2)
        slow = next(r for r in rows[4] if r["servers"] == 1 and r["straggler"] == "persistent" and r["sync"] == "ssp")
        train, model = vm.ps_flags(a, slow)
        self.assertEqual(train, ["--mode", "ps", "--servers", "1", "--sync", "ssp", "--comm-dtype", "f32",
                                 "--staleness", "2", "--slow-rank", "2", "--slow-factor", "2.0"])
        self.assertEqual(model[:2], ["--allreduce", "ps"])
        self.assertEqual(model[-4:], ["--slow-mode", "persistent", "--slow-factor", "2.0"])
        self.assertEqual(vm.label(vm.Layout(4), slow).split()[-5:], ["ps", "ssp", "K=1", "f32", "pers"])

    def test_the_summary_gives_the_parameter_server_rows_apart(self):
        rows = [row("4 ranks, 1 host", 4, "lenet", 0.02, meas=(1.0, 1.1)),
                dict(row("4 ranks, 1 host", 4, "lenet", -0.2, meas=(1.0, 1.1), algorithm="ps"), sync="bsp",
                     servers=1, workers=3, straggler="none"),
                dict(row("4 ranks, 1 host", 4, "lenet", 0.1, meas=(1.0, 1.5), algorithm="ps"), sync="asp",
                     servers=2, workers=2, straggler="persistent")]
        for r in rows:
            r.update(pred=[1.0] * len(r["meas"]), same_state=[True] * len(r["meas"]), predicted_s=1.0, measured_s=1.0)
        out = io.StringIO()
        with tempfile.TemporaryDirectory() as d, contextlib.redirect_stdout(out):
            path = os.path.join(d, "grid.json")
            vm.summarize(rows, path)
            with open(path) as f:
                saved = vm.json.load(f)["parameter_server_rows"]
        self.assertIn("2 parameter-server rows: median absolute error 15.0%, maximum 20.0%; the 1 whose repetitions "
                      "agree within 25%: median 20.0%, maximum 20.0%", out.getvalue())
        self.assertEqual(saved["rows"], 2)
        self.assertEqual(saved["repeatable"], {"rows": 1, "median_abs_error": 0.2, "max_abs_error": 0.2})


if __name__ == "__main__":
    unittest.main()
