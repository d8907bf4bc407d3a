"""Seeded workloads for cascades (issue 37): requests with a checkable answer, and graders.

Each request is an OpenAI chat-completions body with its ground truth and a grader, of one
kind: ``extraction`` (JSON-schema extraction of 3-6 fields about a person, product, order
or pet), ``tools`` (one of 1-3 offered tools to call, its arguments stated), ``short``
(arithmetic, or a code looked up in a list of facts) and ``nested-extraction`` (a 6-field
nested schema a small model nearly always gets wrong: the always-hard kind).

- ``workload.py``: the entry points (``requests``, ``mixed``), JSON Lines in and out,
  ``python -m bench.workloads.cascade``;
- ``records.py``: ``CascadeRequest`` and ``grade``;
- ``extraction.py``, ``tool_calls.py``, ``short_questions.py``: each kind's requests;
- ``grading.py``: the graders and ``answer_of`` (a chat completion's answer).

The phrasing follows what the emulator's oracle reads (``emulator/content/oracle.py``,
docs/emulator.md#oracle-answers), so ``answers: oracle`` answers every request right.
"""
