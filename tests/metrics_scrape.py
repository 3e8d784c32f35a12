"""A scrape of /metrics, parsed with prometheus-client's own parser of the text format."""

from __future__ import annotations

import httpx
from prometheus_client.parser import text_string_to_metric_families


class Samples:
    def __init__(self, text: str) -> None:
        self.text = text
        #: (sample name, labels, value) of every sample
        self.all: list[tuple[str, dict[str, str], float]] = [
            (sample.name, dict(sample.labels), sample.value)
            for family in text_string_to_metric_families(text)
            for sample in family.samples
        ]

    def matching(self, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
        """The samples of `name` whose labels include `labels`."""
        return [
            (found, value)
            for sample, found, value in self.all
            if sample == name and all(found.get(k) == v for k, v in labels.items())
        ]

    def value(self, name: str, **labels: str) -> float:
        """The one sample of `name` with exactly these labels (a histogram's bucket aside); 0 if none."""
        found = [value for got, value in self.matching(name, **labels) if set(got) - {"le"} == set(labels)]
        assert len(found) <= 1, (name, labels, found)
        return found[0] if found else 0.0


def scrape(base_url: str) -> Samples:
    response = httpx.get(f"{base_url}/metrics", timeout=10)
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain"), response.headers
    return Samples(response.text)
