"""Lab 13: `lab finish` removes what the learner made as admin, out of their project's
sight: the volumes of the lab's project, its learner, and the project itself."""


def finish(ctx):
    admin = ctx.admin_api
    projects = admin.get("identity", "/projects", name=ctx.names["project"])["projects"]
    for project in projects:
        volumes = admin.get("volumev3", "/volumes/detail", all_tenants="1",
                            project_id=project["id"])["volumes"]
        for volume in volumes:
            admin.request("DELETE", "volumev3", f"/volumes/{volume['id']}")
    for user in admin.get("identity", "/users", name=ctx.names["learner"])["users"]:
        admin.request("DELETE", "identity", f"/users/{user['id']}")
    for project in projects:
        admin.request("DELETE", "identity", f"/projects/{project['id']}")
