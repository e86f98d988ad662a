"""A Leasehold worker in Python, on a client generated from the OpenAPI document.

Generate the client (docs/api.md, "A Python client"), then run:

    LEASEHOLD_URL=http://localhost:3000 LEASEHOLD_TOKEN=lh_... \
        PYTHONPATH=generated python3 docs/examples/worker.py lease://acme/renderers/doc-1

It opens a session, acquires the route, renews the lease, writes a
checkpoint fenced by the lease's token, shows that a second session is
refused with a typed `ConflictError`, and releases. Each step prints one
JSON line.
"""

import json
import os
import sys
import uuid

import leasehold_client
from leasehold_client.rest import ApiException


def client(url, token):
    config = leasehold_client.Configuration()
    config.host = url
    api = leasehold_client.ApiClient(config)
    # The generated client does not apply HTTP bearer schemes itself: set the header once.
    api.set_default_header("Authorization", "Bearer " + token)
    return api


def error_of(api, exc, model):
    """An error answer as its generated model (ConflictError, NotFoundError, ...)."""

    class Body:
        data = exc.body

    return api.deserialize(Body(), model)


def say(step, **fields):
    print(json.dumps({"step": step, **fields}), flush=True)


def main(route):
    api = client(os.environ["LEASEHOLD_URL"], os.environ["LEASEHOLD_TOKEN"])
    sessions = leasehold_client.SessionsApi(api)
    leases = leasehold_client.LeasesApi(api)
    checkpoints = leasehold_client.CheckpointsApi(api)
    # Path segments go in as they are: the generated client percent-encodes them.
    realm, area, resource = route[len("lease://"):].split("/")

    session = sessions.open_session(leasehold_client.OpenSessionRequest(owner_id="py-worker", ttl_ms=15000)).session
    say("session_opened", holder_incarnation=session.holder_incarnation)

    acquired = leases.acquire_lease(
        leasehold_client.AcquireLeaseRequest(session_id=session.session_id, request_id=str(uuid.uuid4()), ttl_ms=30000),
        realm, area, resource,
    )
    lease = acquired.lease
    say(acquired.code, lease_id=lease.lease_id, fencing_token=lease.fencing_token, expires_at=lease.expires_at.isoformat())

    # Renew well before expires_at, with the lease id and fencing token: the token stays, the deadline moves.
    renewed = leases.renew_lease(
        leasehold_client.RenewLeaseRequest(
            session_id=session.session_id, request_id=str(uuid.uuid4()),
            lease_id=lease.lease_id, fencing_token=lease.fencing_token, ttl_ms=30000,
        ),
        realm, area, resource,
    )
    say(renewed.code, fencing_token=renewed.lease.fencing_token, renewal_count=renewed.lease.renewal_count)

    # Every write the lease guards carries its fencing token: a stale holder gets lease_lost.
    written = checkpoints.write_checkpoint(
        leasehold_client.WriteCheckpointRequest(
            session_id=session.session_id, request_id=str(uuid.uuid4()),
            lease_id=lease.lease_id, fencing_token=lease.fencing_token,
            value={"page": 12, "done": False},
        ),
        realm, area, resource,
    )
    say(written.code, version=written.checkpoint.version, fencing_token=written.checkpoint.fencing_token)

    # Another worker's session is refused while this one holds the route: a typed error, not a string.
    rival = sessions.open_session(leasehold_client.OpenSessionRequest(owner_id="py-rival")).session
    try:
        leases.acquire_lease(
            leasehold_client.AcquireLeaseRequest(session_id=rival.session_id, request_id=str(uuid.uuid4())),
            realm, area, resource,
        )
        say("unexpected_acquire")
    except ApiException as exc:
        conflict = error_of(api, exc, "ConflictError")
        assert isinstance(conflict, leasehold_client.ConflictError)
        say("refused", status=exc.status, code=conflict.code, retryable=conflict.retryable, retry_after_ms=conflict.retry_after_ms)
    sessions.close_session(leasehold_client.CloseSessionRequest(session_id=rival.session_id))

    released = leases.release_lease(
        leasehold_client.ReleaseLeaseRequest(
            session_id=session.session_id, request_id=str(uuid.uuid4()),
            lease_id=lease.lease_id, fencing_token=lease.fencing_token,
        ),
        realm, area, resource,
    )
    say(released.code, fencing_token=released.fencing_token)
    closed = sessions.close_session(leasehold_client.CloseSessionRequest(session_id=session.session_id))
    say(closed.code, released=closed.released)


if __name__ == "__main__":
    main(sys.argv[1])
