"""The agents table: every agent reports its state, the server picks live ones.

Agents call ``report_state`` on the ``q-reports-plugin`` topic when they start
and then every ``report_interval`` seconds (``neutron/db/agents_db.py``). An agent
whose last heartbeat is older than ``agent_down_time`` is dead: it gets no new
work, and a port bound to a host without a live L2 agent fails to bind.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from sqlalchemy import select

from novalab.reference.common.context import RequestContext
from novalab.reference.common.db import Database, utcnow
from novalab.reference.neutron.db.models import Agent
from novalab.tracing.spans import upstream

AGENT_DOWN_TIME = 75.0  # seconds, neutron's default


def agent_dict(row: Agent) -> dict:
    return {"id": row.id, "agent_type": row.agent_type, "binary": row.binary,
            "topic": row.topic, "host": row.host, "admin_state_up": row.admin_state_up,
            "heartbeat_timestamp": row.heartbeat_timestamp, "configurations": row.configurations}


class AgentDbMixin:
    def __init__(self, db: Database, tracer, agent_down_time: float = AGENT_DOWN_TIME):
        self.db = db
        self.tracer = tracer
        self.agent_down_time = agent_down_time

    def is_agent_down(self, heartbeat: datetime) -> bool:
        return heartbeat < utcnow() - timedelta(seconds=self.agent_down_time)

    def get_agents(self, agent_type: str, host: str | None = None,
                   alive_only: bool = True) -> list[dict]:
        query = select(Agent).where(Agent.agent_type == agent_type)
        if host is not None:
            query = query.where(Agent.host == host)
        with self.db.session() as session:
            rows = list(session.scalars(query.order_by(Agent.host)))
        return [agent_dict(r) for r in rows
                if r.admin_state_up and not (alive_only and self.is_agent_down(
                    r.heartbeat_timestamp))]


class AgentExtRpcCallback(AgentDbMixin):
    """The server's endpoint on ``q-reports-plugin``."""

    @upstream("neutron/db/agents_db.py", "AgentExtRpcCallback.report_state")
    def report_state(self, context: RequestContext, agent_state: dict, time: str | None = None):
        """Create or refresh the reporting agent's row; return its status."""
        state = agent_state.get("agent_state", agent_state)
        now = utcnow()
        with self.db.session() as session:
            row = session.scalars(select(Agent).where(
                Agent.agent_type == state["agent_type"], Agent.host == state["host"])).first()
            if row is None:
                session.add(Agent(id=str(uuid.uuid4()), agent_type=state["agent_type"],
                                  binary=state["binary"], topic=state["topic"],
                                  host=state["host"], started_at=now, heartbeat_timestamp=now,
                                  configurations=state.get("configurations") or {}))
                return "new"
            row.heartbeat_timestamp = now
            row.configurations = state.get("configurations") or {}
            if state.get("start_flag"):
                row.started_at = now
            return "alive"
