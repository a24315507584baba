"""Cron jobs: scheduled prompts run in fresh sessions, their output delivered to a chat or file.

``schedule`` reads the four schedule forms, ``targets`` the delivery targets, ``prompt``
assembles attached skills (and scans the result), ``jobs`` makes and changes jobs with every
check, ``service`` runs due jobs and ``tool`` is the model's ``cronjob`` tool. The state
lives in the SessionDB (``core.store.cron``).
"""

from core.cron.jobs import Creator, CronJobs, JobSpec
from core.cron.prompt import CRON_RUN_GUIDANCE
from core.cron.service import CronExecutor, CronOutput, CronRunRequest, CronRunResult, CronService
from core.cron.tool import CRONJOB_TOOL, CronJobTool

__all__ = [
    "CRON_RUN_GUIDANCE",
    "CRONJOB_TOOL",
    "CronExecutor",
    "CronJobTool",
    "CronJobs",
    "CronOutput",
    "CronRunRequest",
    "CronRunResult",
    "CronService",
    "Creator",
    "JobSpec",
]
