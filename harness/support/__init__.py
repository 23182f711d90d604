"""Helpers the test modules share, and only they (what tests and benchmarks share is in harness/): a
test module imports from here, never from another test module.

    reference     an independent float64 NumPy reference of the loop and of Optax's updates
    learner_corpus, catalogues   learners' functions with the mistakes the checker must name
    scan_step_learners, carry_learners, pytree_learners
                  each exercise's own catalogue, run by its test_core_* module (and a carry report's
                  assertions, assert_carry_report)
    checker       the checker's own files, a report's rendered rows
    dashboard     one served page in Chromium (Dashboard), the run it must draw
    visits        pages in a Chromium of their own, from asyncio
    axe           axe-core's violations on a page
    lab           JupyterLab serving a folder, a notebook opened and run in it
    loop          an asyncio loop for protocol sessions in synchronous tests
    make          the Makefile's dry runs, make run's ready line
    own_data      bad CSV files and what is said about each
"""
