"""The lab service: the course's grading, set-up and records, inside the cloud.

A class shares one cloud. If grading ran in each learner's own process it would
need the cloud's admin password, its trace files and its metadata secret, and
the record of who passed would be a file the learner can edit. So, as every
OpenStack service does, the course runs beside the others, behind keystone:

* ``novalab-labs`` (port 8790, service type ``lab`` in keystone's catalog)
  takes the learner's token, so the token says who asks; a learner reaches only
  their own attempts, an admin (the teacher) everyone's;
* it starts an attempt (the lab's ``prepare.start`` runs here, with the cloud's
  own rights), records answers, grades (the lab's checks run here, reading the
  cloud's APIs as the learner, the trace store and the files the learner sends),
  and finishes (removes what the learner's own project and user made);
* attempts and grades are rows in the cloud's database (:mod:`.models`).

* a lab that operates the cloud (reads its files, changes its configuration)
  starts only with an admin's token beside the learner's, in
  :data:`OPERATOR_HEADER`: the cloud's owner has one, a classmate does not.

``novalab lab ...`` is a client of it (:mod:`novalab.labs.client`), from the
cloud's machine or any other.
"""

OPERATOR_HEADER = "X-Operator-Token"
