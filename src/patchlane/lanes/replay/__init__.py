"""The replay lane: a bounded, hashed slice and a receipt that cannot be faked.

- ``lane``: the lane (``replay``, ``obtain_map``, ``ReplayOptions``): what the gate calls;
- ``select`` (with ``mapselect``, ``sharedstate``, ``inert``, ``secrets``, ``canary``): the
  slice, from the base's dependency map and the project's static rules;
- ``maprecord``: recording the base's map and finding it in the cache;
- ``collect``, ``chosen``, ``split``, ``run``: collecting and running tests in children
  (what runs inside them is ``child.replay_collect`` and ``child.replay_run``);
- ``basecheck``: what fails at the base too; ``compiled``: compiled code and its build;
- ``signing``, ``verify``, ``merge``: receipts signed, verified and merged from shards.

Its report is ``formats.replay_report``; its slice, receipt and map are ``formats``' too.
"""
