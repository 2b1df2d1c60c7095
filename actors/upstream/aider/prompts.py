"""The prompts Aider writes as user input although the person did not type them (Aider 0.86.2).

Read from the ``v0.86.2`` tag of Aider-AI/aider. Each is written by
``InputOutput.user_input`` (a ``####`` block, like a typed prompt):

* ``/lint`` (and ``--lint``): for each file with errors, after the person
  answers "Fix lint errors in …?", ``commands.py`` ``cmd_lint`` runs
  ``lint_coder.run(errors)``, which writes the linter's report
  (``linter.py`` ``errors_to_lint_result``: ``# Fix any errors below, if
  possible.`` and the errors) as user input;
* ``/run``, ``/test`` (and ``--test``) whose command failed and whose output
  the person added: ``cmd_run`` pre-fills the next prompt with
  ``What's wrong? Fix`` (``io.placeholder``); pressing Enter sends that text
  unchanged (a person who edits it typed their own words);
* the browser GUI (``aider --gui``, ``gui.py`` ``process_chat``) sends each
  *reflected* message through ``Coder.run_stream``, which writes it as user
  input (the terminal does not): lint errors (above), a failed test's output
  (``prompts.run_output``, ``base_coder.py`` ``auto_test``), and the files
  Aider added because the reply named them (``prompts.added_files``).

:data:`REST` is a program's output or a list of files. Data only.
"""

from __future__ import annotations

from typing import Final

from actors.upstream.fixed_prompts import REST, FixedPrompt, FixedPrompts

__all__ = ["AIDER_PROMPTS"]

AIDER_PROMPTS: Final = FixedPrompts((
    FixedPrompt(action="/lint, --lint, GUI lint reflection",
                origin="aider/linter.py errors_to_lint_result@v0.86.2",
                text=f"# Fix any errors below, if possible.\n\n{REST}"),
    FixedPrompt(action="Enter on the pre-filled prompt after a failed /run or /test",
                origin="aider/commands.py cmd_run (io.placeholder)@v0.86.2",
                text="What's wrong? Fix"),
    FixedPrompt(action="GUI test reflection",
                origin="aider/prompts.py run_output@v0.86.2",
                text=f"I ran this command:\n\n{REST}\n\nAnd got this output:\n\n{REST}\n"),
    FixedPrompt(action="GUI added-files reflection",
                origin="aider/prompts.py added_files@v0.86.2",
                text=f"I added these files to the chat: {REST}\n"
                     "Let me know if there are others we should add."),
))
