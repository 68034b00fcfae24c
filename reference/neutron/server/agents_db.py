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


def _timestamp(value: datetime | None) -> str | None:
    """Agents' times as neutron's API gives them: ``2024-05-01 10:46:44``."""
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else None


# The agent API's filters (``GET /v2.0/agents?agent_type=...&host=...``), by column.
AGENT_FILTERS = {"id": Agent.id, "agent_type": Agent.agent_type, "binary": Agent.binary,
                 "host": Agent.host, "topic": Agent.topic}


class AgentDbMixin:
    def __init__(self, db: Database, tracer, agent_down_time: float = AGENT_DOWN_TIME):
        self.db = db
        self.tracer = tracer
        self.agent_down_time = agent_down_time

    def is_agent_down(self, heartbeat: datetime) -> bool:
        return heartbeat < utcnow() - timedelta(seconds=self.agent_down_time)

    def api_view(self, row: Agent) -> dict:
        """An agent as ``GET /v2.0/agents`` shows it: ``alive`` is the heartbeat's age
        against ``agent_down_time``, as upstream computes it at read time."""
        return {"id": row.id, "agent_type": row.agent_type, "binary": row.binary,
                "topic": row.topic, "host": row.host, "admin_state_up": row.admin_state_up,
                "alive": not self.is_agent_down(row.heartbeat_timestamp),
                "created_at": _timestamp(row.created_at),
                "started_at": _timestamp(row.started_at),
                "heartbeat_timestamp": _timestamp(row.heartbeat_timestamp),
                "description": None, "configurations": row.configurations or {},
                "resources_synced": None}

    @upstream("neutron/db/agents_db.py", "AgentDbMixin.get_agents")
    def list_agents(self, filters: dict[str, list[str]]) -> list[dict]:
        """Every agent that has reported, filtered on ``AGENT_FILTERS``, ``alive`` and
        ``admin_state_up`` (each a list of accepted values)."""
        query = select(Agent).order_by(Agent.agent_type, Agent.host)
        for key, column in AGENT_FILTERS.items():
            if key in filters:
                query = query.where(column.in_(filters[key]))
        with self.db.session() as session:
            agents = [self.api_view(r) for r in session.scalars(query)]
        for key in ("alive", "admin_state_up"):
            if key in filters:
                wanted = {v.lower() in ("true", "1", "yes") for v in filters[key]}
                agents = [a for a in agents if a[key] in wanted]
        return agents

    @upstream("neutron/db/agents_db.py", "AgentDbMixin.get_agent")
    def get_agent(self, agent_id: str) -> dict | None:
        with self.db.session() as session:
            row = session.get(Agent, agent_id)
            return self.api_view(row) if row is not None else None

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
