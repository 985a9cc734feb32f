//! The agent registry's statements on PostgreSQL ([`crate::store::driver::agents`]); the
//! rules are [`crate::store::queue::agents`].

use postgres::{GenericClient, Row};

use super::tx::{PgRead, Tx};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::agents::{
    AgentEnd, AgentInstanceRef, AgentReads, AgentRow, AgentStatements, LiveAgentRow, NewAgent,
};

fn agent_row(r: &Row) -> Result<AgentRow> {
    Ok(AgentRow {
        id: r.try_get(0)?,
        instance: r.try_get(1)?,
        owner: r.try_get(2)?,
        lineage: r.try_get(3)?,
        entered_ms: r.try_get(4)?,
        expires_ms: r.try_get(5)?,
        ended_ms: r.try_get(6)?,
        end_reason: r.try_get(7)?,
    })
}

fn instance_ref(r: &Row) -> Result<AgentInstanceRef> {
    Ok(AgentInstanceRef {
        id: r.try_get(0)?,
        instance: r.try_get(1)?,
    })
}

impl<C: GenericClient> AgentReads for PgRead<'_, C> {
    fn live_agent_row(&mut self, id: &str, now: Millis) -> Result<Option<LiveAgentRow>> {
        match self.0.query_opt(
            "SELECT instance, owner_id FROM agents
             WHERE agent_id = $1 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= $2)",
            &[&id, &now],
        )? {
            Some(r) => Ok(Some(LiveAgentRow {
                instance: r.try_get(0)?,
                owner: r.try_get(1)?,
            })),
            None => Ok(None),
        }
    }

    fn agent_instance_row(&mut self, id: &str, instance: &str) -> Result<Option<AgentRow>> {
        self.0
            .query_opt(
                "SELECT agent_id, instance, owner_id, lineage, entered_ms, expires_ms, ended_ms, end_reason
                 FROM agents WHERE agent_id = $1 AND instance = $2",
                &[&id, &instance],
            )?
            .as_ref()
            .map(agent_row)
            .transpose()
    }

    fn agent_rows(&mut self, not_ended_only: bool) -> Result<Vec<AgentRow>> {
        self.0
            .query(
                "SELECT agent_id, instance, owner_id, lineage, entered_ms, expires_ms, ended_ms, end_reason
                 FROM agents WHERE (NOT $1 OR ended_ms IS NULL) ORDER BY entered_ms DESC, agent_id",
                &[&not_ended_only],
            )?
            .iter()
            .map(agent_row)
            .collect()
    }
}

impl AgentStatements for Tx<'_> {
    fn supersede_not_ended_agent(&mut self, id: &str, now: Millis) -> Result<usize> {
        Ok(self.tx.execute(
            "UPDATE agents SET ended_ms = $1, end_reason = 'superseded' WHERE agent_id = $2 AND ended_ms IS NULL",
            &[&now, &id],
        )? as usize)
    }

    fn insert_agent(&mut self, a: NewAgent<'_>) -> Result<()> {
        self.tx.execute(
            "INSERT INTO agents (agent_id, instance, owner_id, owner_instance, lineage, ttl_ms, entered_ms, heartbeat_ms, expires_ms)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8)",
            &[&a.id, &a.instance, &a.owner, &a.owner_instance, &a.lineage, &a.ttl_ms, &a.now, &a.expires_ms],
        )?;
        Ok(())
    }

    fn heartbeat_agent_if_live(&mut self, id: &str, instance: &str, now: Millis) -> Result<usize> {
        Ok(self.tx.execute(
            "UPDATE agents SET heartbeat_ms = $1, expires_ms = CASE WHEN ttl_ms IS NULL THEN NULL ELSE $1 + ttl_ms END
             WHERE agent_id = $2 AND instance = $3 AND ended_ms IS NULL AND (expires_ms IS NULL OR expires_ms >= $1)",
            &[&now, &id, &instance],
        )? as usize)
    }

    fn end_agent_if_not_ended(
        &mut self,
        id: &str,
        instance: &str,
        now: Millis,
        why: AgentEnd,
    ) -> Result<usize> {
        Ok(self.tx.execute(
            "UPDATE agents SET ended_ms = $1, end_reason = $4
             WHERE agent_id = $2 AND instance = $3 AND ended_ms IS NULL",
            &[&now, &id, &instance, &why.as_str()],
        )? as usize)
    }

    fn not_ended_agents_owned_by(&mut self, owner: &str) -> Result<Vec<AgentInstanceRef>> {
        self.tx
            .query(
                "SELECT agent_id, instance FROM agents WHERE owner_id = $1 AND ended_ms IS NULL
                 ORDER BY entered_ms, agent_id",
                &[&owner],
            )?
            .iter()
            .map(instance_ref)
            .collect()
    }

    fn not_ended_agents_expired_before(&mut self, now: Millis) -> Result<Vec<AgentInstanceRef>> {
        self.tx
            .query(
                "SELECT agent_id, instance FROM agents
                 WHERE ended_ms IS NULL AND expires_ms IS NOT NULL AND expires_ms < $1
                 ORDER BY expires_ms, agent_id",
                &[&now],
            )?
            .iter()
            .map(instance_ref)
            .collect()
    }
}
