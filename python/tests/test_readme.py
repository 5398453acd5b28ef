"""The two examples of python/README.md run as written (the cluster URL, the
index name and the number of documents substituted)."""
import os
import re

from conftest import count

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "README.md")


def blocks():
    with open(README, encoding="utf-8") as f:
        return re.findall(r"```python\n(.*?)```", f.read(), re.S)


def run(code, url, index, **names):
    code = code.replace("http://127.0.0.1:9200", url).replace('"logs"', repr(index))
    exec(compile(code, README, "exec"), dict(names))


def test_indexer_example(url, make_index, capsys):
    index = make_index()
    rows = [{"n": i} for i in range(500)] + [{"n": "not a number"}]
    run(blocks()[0], url, index, rows=rows)
    out = capsys.readouterr().out
    assert "500 400 mapper_parsing_exception" in out  # the bad row, reported by report()
    assert count(index) == 500


def test_helpers_example(url, make_index):
    index = make_index()
    code = blocks()[1].replace("range(1000000)", "range(2000)")
    code = code.replace(', http_auth=("admin", "secret")', "")  # the test cluster has no auth
    run(code, url, index)
    assert count(index) == 2000
