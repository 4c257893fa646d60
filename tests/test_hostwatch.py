"""What a supervised child counts about its host code, read by the supervisor after the child died
(evalglass/hostwatch.py): each label with hand-offs in flight, and the one entered last."""

from __future__ import annotations

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from evalglass import hostwatch

_labels = st.lists(
    st.text(st.characters(blacklist_characters="\x00", blacklist_categories=["Cs"]), min_size=1, max_size=50),
    min_size=1,
    max_size=12,
    unique=True,
)


def _in_a_dead_child(labels: list[str], steps: list[tuple[int, bool]]) -> tuple[list[str], str | None]:
    """Register ``labels`` in a forked child, enter (True) or leave (False) them as ``steps`` say, end the child
    with ``os._exit`` and read the page as the supervisor does."""
    page = hostwatch.shared_page()
    pid = os.fork()
    if pid == 0:
        try:
            hostwatch._labels.clear()  # the child's copy: this test's labels take the first slots
            hostwatch.record_into(page)
            watches = [hostwatch.watch(label) for label in labels]
            for index, enter in steps:
                (watches[index].enter if enter else watches[index].leave)()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    try:
        return hostwatch.running_in(page)
    finally:
        page.close()


@settings(max_examples=40, deadline=None)
@given(labels=_labels, data=st.data())
def test_the_supervisor_reads_what_was_in_flight_and_what_ran_last(labels: list[str], data: st.DataObject) -> None:
    steps = data.draw(st.lists(st.tuples(st.integers(0, len(labels) - 1), st.booleans()), max_size=40))
    in_flight = [0] * len(labels)
    last = None
    for index, enter in steps:
        if enter:
            in_flight[index] += 1
            last = labels[index]
        elif in_flight[index]:
            in_flight[index] -= 1
    running, found_last = _in_a_dead_child(labels, steps)
    assert running == [label for label, count in zip(labels, in_flight, strict=True) if count]
    assert found_last == last


def test_a_label_longer_than_a_slot_is_cut_on_a_character_boundary() -> None:
    label = "python metric 'é' (" + "é" * 300 + ")"
    running, _ = _in_a_dead_child([label], [(0, True)])
    (cut,) = running
    assert label.startswith(cut) and len(cut.encode()) <= hostwatch.LABEL_BYTES
