#!/bin/sh
# Makes the secrets the compose stack needs, in infra/secrets/ (git-ignored), and pins the
# SFTP server's new host key in infra/dropline.config.json. Run once before
# `docker compose -f infra/compose.yaml up`; again with --force to replace them all.
#   SECRETS_DIR  where to write (default: infra/secrets beside this script)
#   CONFIG       the dropline configuration whose hostKeySha256 is set
#                (default: infra/dropline.config.json)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${SECRETS_DIR:-$here/secrets}
config=${CONFIG:-$here/dropline.config.json}

if [ -e "$dir/minio_root_password" ] && [ "${1:-}" != "--force" ]; then
  echo "secrets already in $dir (run with --force to replace them)" >&2
  exit 0
fi
mkdir -p "$dir"
rm -f "$dir/sftp_host_ed25519_key" "$dir/sftp_host_ed25519_key.pub" \
      "$dir/sftp_client_key" "$dir/sftp_client_key.pub"

random() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }

# The sandbox's demo account (dropline sandbox accepts demo/demo unless --accounts says otherwise).
printf 'demo\n' > "$dir/api_password"
# The secret in the delivery-report URL.
random > "$dir/notify_token"
# The ops API's bearer token: ops.listen is 0.0.0.0 inside the container, so one is required.
random > "$dir/ops_token"
# MinIO's root user; dropline uses the same key through the AWS SDK's shared credentials file.
printf 'dropline\n' > "$dir/minio_root_user"
random > "$dir/minio_root_password"
{
  echo '[default]'
  echo 'aws_access_key_id = dropline'
  echo "aws_secret_access_key = $(cat "$dir/minio_root_password")"
} > "$dir/aws_credentials"
# The SFTP server's host key (pinned below) and dropline's login key.
ssh-keygen -q -t ed25519 -N '' -C 'sftp host key' -f "$dir/sftp_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C 'dropline' -f "$dir/sftp_client_key"
# sshd refuses a host key others can read; the containers' users (root in sftp, uid 1000 in
# dropline) read the rest through bind mounts, which keep these modes.
chmod 600 "$dir/sftp_host_ed25519_key"
chmod 644 "$dir/api_password" "$dir/notify_token" "$dir/ops_token" "$dir/minio_root_user" "$dir/minio_root_password" \
          "$dir/aws_credentials" "$dir/sftp_client_key" "$dir/sftp_client_key.pub" "$dir/sftp_host_ed25519_key.pub"

fingerprint=$(ssh-keygen -l -E sha256 -f "$dir/sftp_host_ed25519_key.pub" | awk '{print $2}')
sed -i.bak "s#\"hostKeySha256\": \"SHA256:[^\"]*\"#\"hostKeySha256\": \"$fingerprint\"#" "$config"
rm -f "$config.bak"
echo "secrets written to $dir; SFTP host key $fingerprint pinned in $config"
