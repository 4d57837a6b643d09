// AgentStore: agent enrolment, credentials, listing and draining.
#include "coordinator/store/agent_store.h"

#include <set>
#include <string>

#include "common/codecs.h"
#include "coordinator/rules/agent_names.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store_core.h"
#include "coordinator/store/unsupported_jobs.h"

namespace benchfleet::store {

Result<std::optional<StoredAgentKey>> AgentStore::agent_key(const std::string& name) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<StoredAgentKey>> {
    BF_ASSIGN_OR_RETURN(auto row, core_.db().query_one("SELECT id, key_salt IS NOT NULL AND key_hash IS NOT NULL,"
                                                       " key_salt, key_hash FROM agents WHERE name = ?",
                                                       name));
    if (!row.found()) return std::optional<StoredAgentKey>();
    StoredAgentKey key;
    key.agent_id = row->int64(0);
    if (row->int64(1) != 0) {
      key.salt = row->blob(2);
      key.hash = row->blob(3);
    }
    return std::optional<StoredAgentKey>(std::move(key));
  });
}

Result<std::int64_t> AgentStore::enroll_agent(const AgentDescriptor& d, const AgentCredentials& credentials,
                                              const EnrolmentClaim& claim, const std::optional<AgentCredentials>& key) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::int64_t> {
    const TimestampMs now = core_.clock().now_ms();
    std::int64_t id = 0;
    {
      BF_ASSIGN_OR_RETURN(
          auto existing,
          core_.db().query_one("SELECT id, reenrol_approved_at IS NOT NULL FROM agents WHERE name = ?", d.name));
      if (existing.found() && !claim.open && claim.proven_agent != existing->int64(0) && existing->int64(1) == 0) {
        return Error{ErrorCode::kConflict,
                     "an agent named \"" + d.name + "\" (id " + std::to_string(existing->int64(0)) +
                         ") is enrolled; enrolling under its name needs that agent's key (header X-Agent-Key, kept"
                         " in its state directory), its current token (header X-Agent-Token) or an operator's"
                         " approval (benchfleet agents approve " +
                         d.name + ")",
                     "name"};
      }
      if (!existing.found()) {
        // A new name that reads as an enrolled one (case, width, spaces, normalisation, a
        // look-alike letter) would pass for that agent in every list: one name, refused.
        const std::string key = rules::agent_name_key(d.name);
        BF_ASSIGN_OR_RETURN(auto all, core_.db().prepare("SELECT id, name FROM agents"));
        while (true) {
          BF_ASSIGN_OR_RETURN(bool row, all->step());
          if (!row) break;
          const std::string other = all->text(1);
          if (rules::agent_name_key(other) != key) continue;
          return Error{ErrorCode::kConflict,
                       "\"" + d.name + "\" reads as the enrolled agent \"" + other + "\" (id " +
                           std::to_string(all->int64(0)) +
                           "): names that differ only in case, width, surrounding spaces, Unicode normalisation or "
                           "look-alike letters are one name. Enrol under \"" +
                           other + "\" (with its key, token or an approval) or choose another name",
                       "name"};
        }
      }
    }
    {
      BF_ASSIGN_OR_RETURN(
          auto upsert,
          core_.db().query_one(
              "INSERT INTO agents (name, hostname, version, descriptor, enrolled_at, last_seen_at, draining)"
              " VALUES (?1, ?2, ?3, ?4, ?5, ?5, 0)"
              " ON CONFLICT(name) DO UPDATE SET hostname = ?2, version = ?3, descriptor = ?4, enrolled_at = ?5,"
              " last_seen_at = ?5, draining = 0, self_draining = 0, reenrol_approved_at = NULL RETURNING id",
              d.name, d.hostname, d.version, nlohmann::json(d).dump(), now));
      if (!upsert.found()) return Error::internal("agent upsert returned no id");
      id = upsert->int64(0);
    }
    if (key) {
      BF_ASSIGN_OR_RETURN(auto keep,
                          core_.db().prepare("UPDATE agents SET key_salt = ?1, key_hash = ?2 WHERE id = ?3"));
      BF_RETURN_IF_ERROR(keep->bind_blob(1, key->salt).bind_blob(2, key->hash).bind(3, id).run());
    }
    {
      BF_ASSIGN_OR_RETURN(
          auto token,
          core_.db().prepare("INSERT INTO agent_tokens (agent_id, salt, hash, created_at) VALUES (?1, ?2, ?3, ?4)"
                             " ON CONFLICT(agent_id) DO UPDATE SET salt = ?2, hash = ?3, created_at = ?4"));
      token->bind(1, id).bind_blob(2, credentials.salt).bind_blob(3, credentials.hash).bind(4, now);
      BF_RETURN_IF_ERROR(token->run());
    }
    core_.forget_agent(id);

    BF_RETURN_IF_ERROR(core_.db().run("DELETE FROM agent_slots WHERE agent_id = ?", id));
    BF_ASSIGN_OR_RETURN(
        auto slot, core_.db().prepare(
                       "INSERT INTO agent_slots (agent_id, slot, gpu_class, gpu_name, gpu_uuid, memory_mb, descriptor)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?)"));
    for (const auto& s : d.slots) {
      slot->bind(1, id).bind(2, s.id).bind(3, s.gpu_class);
      if (s.gpu) {
        slot->bind(4, s.gpu->name).bind(5, s.gpu->uuid).bind(6, s.gpu->memory_mb);
      } else {
        slot->bind_null(4).bind_null(5).bind_null(6);
      }
      slot->bind(7, nlohmann::json(s).dump());
      BF_RETURN_IF_ERROR(slot->run());
    }
    // What its builds lack, judged now for everything queued, instead of on each of its leases.
    std::set<std::string> judged;
    for (const auto& s : d.slots) {
      if (judged.insert(s.gpu_class).second) {
        BF_RETURN_IF_ERROR(mark_unsupported(core_, rules::SlotOffer{id, s.id, s.gpu_class, d.torch_builds}));
      }
    }
    return id;
  });
}

Status AgentStore::approve_reenrolment(std::int64_t agent_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE agents SET reenrol_approved_at = ? WHERE id = ?", core_.clock().now_ms(), agent_id));
    if (core_.db().changes() == 0) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    return Status::Ok();
  });
}

Result<AgentCredentials> AgentStore::agent_credentials(std::int64_t agent_id) {
  // Every agent request is authenticated: a cached answer keeps that out of the write path.
  if (auto cached = core_.cached_credentials(agent_id)) return *cached;
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<AgentCredentials> {
    BF_ASSIGN_OR_RETURN(auto row,
                        core_.db().query_one("SELECT salt, hash FROM agent_tokens WHERE agent_id = ?", agent_id));
    if (!row.found()) return Error::not_found("agent " + std::to_string(agent_id) + " is not enrolled");
    AgentCredentials c{row->blob(0), row->blob(1)};
    // Under the store lock, so no enrolment can come between this read and the insert.
    core_.cache_credentials(agent_id, c);
    return c;
  });
}

Result<AgentInfo> AgentStore::get_agent(std::int64_t agent_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<AgentInfo> { return core_.agent_info_locked(agent_id); });
}

Result<std::vector<AgentInfo>> AgentStore::list_agents() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<AgentInfo>> {
    std::vector<std::int64_t> ids;
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT id FROM agents ORDER BY name"));
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      ids.push_back(s->int64(0));
    }
    std::vector<AgentInfo> agents;
    for (auto id : ids) {
      BF_ASSIGN_OR_RETURN(auto info, core_.agent_info_locked(id));
      agents.push_back(std::move(info));
    }
    return agents;
  });
}

Status AgentStore::set_draining(std::int64_t agent_id, bool draining) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    BF_RETURN_IF_ERROR(core_.db().run("UPDATE agents SET draining = ? WHERE id = ?", draining ? 1 : 0, agent_id));
    if (core_.db().changes() == 0) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    // Waiting lease requests re-check once this is durable, so a draining agent's long poll
    // returns at once.
    core_.work_appeared();
    return Status::Ok();
  });
}

Status AgentStore::set_self_draining(std::int64_t agent_id, bool draining) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    BF_ASSIGN_OR_RETURN(
        auto s, core_.db().prepare("UPDATE agents SET self_draining = ?1 WHERE id = ?2 AND self_draining != ?1"));
    BF_RETURN_IF_ERROR(s->bind(1, draining ? 1 : 0).bind(2, agent_id).run());
    // Only a change matters to waiting lease requests (heartbeats repeat the same value).
    if (core_.db().changes() > 0) core_.work_appeared();
    return Status::Ok();
  });
}

}  // namespace benchfleet::store
