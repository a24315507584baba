"""Cron jobs: scheduled prompts run in fresh sessions, their output delivered to a chat or file.

``schedule`` reads the four schedule forms, ``targets`` the delivery targets, ``prompt``
assembles attached skills (and scans the result), ``jobs`` makes and changes jobs with every
check, ``service`` runs due jobs and ``tool`` is the model's ``cronjob`` tool. The state
lives in the SessionDB (``core.store.cron``).
"""
