"""Which tests get which mark (tests/conftest.py sets them at collection): MARKS[mark] are the fixtures
that start an outside process of that kind, SLOW the in-process tests that take minutes together, and
GROUPS the modules that run in one process under xdist (every other module is a scope of its own),
SECONDS the longest scopes, which xdist is handed first."""

# The fixtures that start each kind of outside process; a test using one, at any depth, is marked.
MARKS = {
    "browser": {"browser", "chromium", "visit"},  # headless Chromium
    "served": {"make_run", "dashboard_server", "dashboard_url"},  # the dashboard under `make run`
    "lab": {"jupyter_lab", "jupyter_server", "classroom", "lab_server"},  # JupyterLab or jupyter_server
}

# In-process, but minutes together: `make check` runs them, `make quick` leaves them out. A module,
# or one test function of it (all its parameters). Seconds: summed over the parameters, `--durations`
# under `-n 2` on this 2-core machine while another suite ran (2026-12-05).
SLOW = {
    "test_learner_corpus",  # 49 s: 100 learners' functions through the checker
    # 45 s: 124 learners' functions drawn, each compiled once per prefix (2026-12-06)
    "test_explore::test_the_parting_step_and_both_carries_are_those_of_float64_loops",
    "test_explore::test_every_named_numeric_mistake_parts_and_every_right_function_does_not",  # 15 s
    "test_notebook",  # 17 s: app.ipynb through nbclient in the dashboard's kernel
    "test_package",  # 45 s: the wheel built, installed, its notebooks through nbclient (2026-12-06)
    "test_stored_runs",  # 34 s: every stored run computed again
    # 11 s: exercise.ipynb through nbclient
    "test_exercise::test_exercise_notebook_runs_with_the_placeholders_solutions_and_mistakes",
    "test_checker_words::test_no_finding_names_a_file_of_the_checker",  # 25 s: 82 checker runs
    "test_exercise_words::test_no_row_of_any_catalogue_s_report_has_an_empty_field",  # 33 s: the same 79
    "test_core_optimizers::test_on_padded_batches_each_optimizer_is_its_unpadded_run",  # 43 to 147 s
    "test_core_optimizers::test_each_optimizer_matches_optax_in_a_python_loop",  # 19 s
    "test_core_dtypes_and_compiles::test_every_path_agrees_even_when_diverging",  # 41 s
    "test_core_dtypes_and_compiles::test_stable_runs_agree_bit_for_bit_on_every_path",  # 38 s
    "test_core_dtypes_and_compiles::test_engine_padding_changes_no_number",  # 28 s
    "test_core_dtypes_and_compiles::test_engine_corner_is_the_padded_slice_bit_for_bit",  # 10 s: 12 shapes
    "test_hood::test_loops_panel_measures_every_way_and_the_host_syncs",  # 14 s: timing in a subprocess
    "test_lesson::test_the_pytree_loop_gives_the_w_b_charts_numbers",  # 15 s: 30 random settings
    "test_lesson::test_the_lesson_gives_the_charts_numbers",  # 10 s: 41 random settings
    "test_explorer::test_no_control_of_the_w_b_model_recompiles",  # 16 s
    "test_script::test_the_script_reproduces_the_explorers_final_weight",  # 13 s: 13 scripts run
    # 14 s, the same scripts' fixture (2026-12-06)
    "test_script::test_the_seed_example_script_prints_the_seeds_number",
    # 13 s: two kernels in subprocesses (2026-12-06)
    "test_validators::test_a_kernel_parses_only_the_entries_its_figures_use_and_draws_the_same_figures",
    "test_project::test_make_quick_check_and_test_run_what_their_marks_say",  # 8 s: three collections
    "test_own_data_exports::test_the_script_of_data_of_rows_ends_where_the_explorer_does",  # 12 s: 10
    "test_core_optimizers::test_each_optimizer_matches_its_update_rule_in_float64",  # 12 s
    "test_core_stability::test_pytree_map_cells_are_pytree_history_runs",  # 11 s
    "test_core_linear::test_padding_changes_no_number",  # 9 s
    "test_core_strategies::test_the_learning_rate_in_each_place",  # 9 s
    "test_core_pytree_exercise::test_the_models_agree_with_the_engine_and_optax",  # 8 s
    "test_preheat::test_optax_runs_only_when_used",  # 7 s: a kernel's imports in a subprocess
    # 45 s: 30 students' notebooks through the class report's workers (2026-12-07)
    "test_class_report::test_every_cell_is_the_checkers_verdict",
    "test_class_report::test_a_students_code_runs_in_their_folder_and_nowhere_else",
    "test_class_report::test_the_gradescope_export_names_the_mistake",
    "test_class_report::test_the_command_line",  # 5 s: a worker and the report in subprocesses
    # 13 s: make's dry runs of lab, class and test
    "test_project::test_make_lab_installs_jupyterlab_into_the_dashboards_environment_without_moving_a_pin",
}

# Modules that read the same checker reports (harness.support.checker.checked), which are run once per
# process: in one process, each learner's function is checked once.
GROUPS = dict.fromkeys(
    ("test_checker_words", "test_exercise_words", "test_learner_corpus"), "checker reports"
)

# The scopes that take longest (a module, or a GROUPS name), in seconds: setup, call and teardown
# summed, from `make test`'s junit report on this 2-core machine, quiet (2026-12-06 07:25). xdist
# hands scopes out one at a time as processes finish them; handed out longest first, the run no
# longer ends with one process on a long browser module while the other waits. A module's seconds
# depend on what ran beside it (the stored runs took 28 s alone, 64 s beside a compile-heavy
# module), so the order is kept by what it measured: this one ran `make test` in 837, 825, 861 s;
# the order of a later report (the stored runs and the optimizers earlier, the room's pages later)
# in 915 and 967 s. Scopes not named here follow, in collection order.
SECONDS = {
    "test_dashboard": 247,
    "checker reports": 130,
    "test_protocol": 129,
    "test_room_browser": 128,
    "test_core_dtypes_and_compiles": 124,
    "test_faults": 250,  # (2026-12-07, make test's slowest durations; the saves 25 s)
    "test_lifecycle": 90,
    "test_explore": 60,  # its corpus tests alone about 45 s of one process (2026-12-06)
    "test_explorer": 65,
    "test_package": 45,  # (2026-12-06, a timeline of make test's modules)
    "test_accessibility": 64,
    "test_missed_updates": 62,
    "test_core_optimizers": 46,
    "test_class": 45,
    "test_hub_home": 36,
    "test_own_data_browser": 36,
    "test_core_exercise": 35,
    "test_lab": 75,  # three tests, each its own JupyterLab (2026-12-06)
    "test_class_report": 55,  # its 30 notebooks: 45 s of both cores (2026-12-07)
    "test_still_page": 31,
    "test_terminal": 31,
    "test_stored_runs": 31,
    "test_exercise_class": 29,
    "test_core_carry_exercises": 28,
    "test_script": 27,
}
