import pytest

from tasks.evaluation.summary import markdown_table, plot, summarize


def _row(model, run, q, diff, dom, tier, passed, reward):
    return dict(model=model, run=run, query_id=q, difficulty=diff, domain=dom, tier=tier, passed=passed, reward=reward)


def test_pass_rates_are_averaged_over_runs_by_difficulty_and_domain():
    rows = [
        _row("sft", 0, "a", "easy", "Games", "valid", True, 1.0),
        _row("sft", 0, "b", "hard", "Tools", "runtime_invalid", False, 0.2),
        _row("sft", 1, "a", "easy", "Games", "valid", False, 0.6),
        _row("sft", 1, "b", "hard", "Tools", "valid", False, None),
    ]
    s = summarize(rows)["sft"]
    assert s["pass/overall"] == pytest.approx(25.0)          # run0 50%, run1 0%
    assert s["pass/difficulty=easy"] == pytest.approx(50.0)  # run0 100%, run1 0%
    assert s["pass/domain=Tools"] == pytest.approx(0.0)
    assert s["tier/valid"] == pytest.approx(75.0)             # run0 50%, run1 100%
    assert s["reward/mean"] == pytest.approx((0.6 + 0.6) / 2)  # run0 mean 0.6, run1 mean 0.6 (None skipped)
    assert s["runs"] == 2


def test_side_by_side_deltas(tmp_path):
    rows = [_row("sft", 0, "a", "easy", "Games", "valid", False, 0.5),
            _row("rl", 0, "a", "easy", "Games", "valid", True, 1.0)]
    md = markdown_table(summarize(rows), baseline="sft")
    line = next(l for l in md.splitlines() if l.startswith("| pass/overall"))
    assert "+100.00" in line
    assert plot(rows, tmp_path / "p.png").stat().st_size > 1000


def test_unknown_tier_is_rejected():
    with pytest.raises(ValueError, match="allowed"):
        summarize([_row("m", 0, "a", "easy", "Games", "great", True, 1.0)])


# -- screenshots: the browser check keeps them during the same load, and no verdict changes ---------------------
import hashlib  # noqa: E402
from pathlib import Path  # noqa: E402

from schemas.config.env import RuntimeConfig  # noqa: E402
from tasks.env.extract import extract_html  # noqa: E402
from tasks.env.probe import interaction_failures  # noqa: E402
from tasks.env.runtime import VIEWPORT, BrowserRuntime
from tasks.env.shots import ScreenshotSpec, app_key
from tasks.evaluation.screenshots import FOLDER, off_reason, screenshot_columns  # noqa: E402

FIX = Path(__file__).parent / "fixtures" / "env"
APPS = {  # name -> (app, the status it gets, whatever the screenshots and the machine's load)
    "wired": ((FIX / "interaction" / "button_wired.html").read_text(), "ok"),
    "probe_throws": ((FIX / "interaction" / "key_throws.html").read_text(), "ok"),
    "throws": (extract_html((FIX / "throws.txt").read_text()).html, "page_error"),
    "blank": ("<!DOCTYPE html><html><body></body></html>", "blank"),
}


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """The same apps checked without, then with screenshots, in one browser."""
    data = tmp_path_factory.mktemp("shots") / "data"
    cfg = RuntimeConfig()  # the limits verdicts are made with (shorter ones time out under load)
    htmls = [a for a, _ in APPS.values()]
    with BrowserRuntime(cfg) as rt:
        plain = rt.check_many(htmls)
        assert not rt.shots  # training's runtime never takes one
        rt.screenshots = ScreenshotSpec(data / FOLDER, timeout_s=5.0)
        kept = rt.check_many(htmls)
        yield data, cfg, plain, kept, dict(rt.shots)


def _verdict(ev, cfg):
    status = ev.interaction.status if ev.interaction else None
    return ev.status, ev.runtime_valid(cfg), status, len(interaction_failures(ev.interaction)), len(ev.page_errors)


def test_screenshots_do_not_change_verdicts(shots):
    data, cfg, plain, kept, _ = shots
    assert [_verdict(e, cfg) for e in kept] == [_verdict(e, cfg) for e in plain]
    assert dict(zip(APPS, (e.status for e in kept))) == {k: s for k, (_, s) in APPS.items()}
    throws = kept[list(APPS).index("probe_throws")]
    assert interaction_failures(throws.interaction) and throws.runtime_valid(cfg) is False  # a probe verdict too


def test_screenshot_after_load_before_the_probe_and_after_it(shots):
    from PIL import Image

    data, cfg, _, kept, recs = shots
    wired = recs[app_key(APPS["wired"][0])]
    load, probe = data / FOLDER / wired["load"], data / FOLDER / wired["probe"]
    with Image.open(load) as a:
        assert a.size == (VIEWPORT["width"], VIEWPORT["height"])  # before the probe resized the viewport
    digest = lambda f: hashlib.sha256(f.read_bytes()).hexdigest()  # noqa: E731
    assert digest(load) != digest(probe)  # the probe clicked: the swatch changed colour
    assert set(recs[app_key(APPS["blank"][0])]) == {"load"}  # loaded, not probed: the load screenshot only
    # an error at load: the probe uses the app to see whether the error blocks (env.runtime.probe.load_error_rule)
    assert set(recs[app_key(APPS["throws"][0])]) == {"load", "probe"}


def test_screenshot_columns_say_why_a_path_is_null(shots):
    data, cfg, _, kept, recs = shots
    exists = lambda rel: (data / rel).is_file()  # noqa: E731
    cols = {name: screenshot_columns(html, ev.status, recs.get(app_key(html)), off=None, probe_enabled=True,
                                     exists=exists) for (name, (html, _)), ev in zip(APPS.items(), kept)}
    assert cols["wired"]["screenshot_load"].startswith(FOLDER + "/") and cols["wired"]["screenshot_probe"]
    assert cols["wired"]["screenshot_note"] is None
    assert cols["throws"]["screenshot_load"] and cols["throws"]["screenshot_probe"] is None
    assert cols["throws"]["screenshot_note"] == "probe: no probe ran (runtime status page_error)"
    never = screenshot_columns(APPS["wired"][0], "load_timeout", None, off=None, probe_enabled=True, exists=exists)
    assert never == {"screenshot_load": None, "screenshot_probe": None, "screenshot_note":
                     "load: the app never reached its screenshot (runtime status load_timeout); "
                     "probe: no probe ran (runtime status load_timeout)"}
    no_app = screenshot_columns(None, None, None, off=None, probe_enabled=True, exists=exists)
    assert no_app["screenshot_note"] == "no HTML application in the response"
    off = screenshot_columns(APPS["wired"][0], "ok", recs[app_key(APPS["wired"][0])],
                             off=off_reason(False, True), probe_enabled=True, exists=exists)
    assert off == {"screenshot_load": None, "screenshot_probe": None,
                   "screenshot_note": "screenshots off (evaluation.screenshots=false)"}
    gone = screenshot_columns(APPS["wired"][0], "ok", {"load": "0-load.png"}, off=None, probe_enabled=False,
                              exists=exists)
    assert gone["screenshot_load"] is None and "is missing" in gone["screenshot_note"]
    assert "probe off" in gone["screenshot_note"]


class _SlowCamera(BrowserRuntime):
    """A screenshot that takes longer than the app's whole hard limit (a slow machine, a huge page)."""

    async def _capture(self, page, spec):
        import asyncio

        await asyncio.sleep(self.cfg.hard_limit_s + 0.5)
        return await super()._capture(page, spec)


def test_a_slow_screenshot_is_not_the_apps_time(tmp_path):
    from schemas.config.env import ProbeConfig

    cfg = RuntimeConfig(load_timeout_s=1.0, hard_limit_s=3.0, probe=ProbeConfig(enabled=False))
    with _SlowCamera(cfg, screenshots=ScreenshotSpec(tmp_path, timeout_s=5.0)) as rt:
        ev = rt.check(APPS["wired"][0])
    assert ev.status == "ok" and ev.runtime_valid(cfg) is True  # not 'unresponsive' at the hard limit
    assert (tmp_path / rt.shots[app_key(APPS["wired"][0])]["load"]).is_file()
