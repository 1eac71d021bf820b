#!/bin/sh
# Makes the secrets the compose stack needs, in infra/secrets/ (git-ignored). Run once before
# `docker compose -f infra/compose.yaml up`; again with --force to replace them all, or
# without it to add only those an older version of this script did not make. It edits no
# tracked file: the SFTP host key is pinned through the public key it writes here
# (hostKeyFile in dropline.config.json).
#   SECRETS_DIR  where to write (default: infra/secrets beside this script)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
dir=${SECRETS_DIR:-$here/secrets}

random() { od -An -N24 -tx1 /dev/urandom | tr -d ' \n'; }
# Nobody but this user can enter the folder, whatever the modes of the files inside.
umask 077

# The PostgreSQL store's password: the postgres service sets it when its volume is first
# initialised (POSTGRES_PASSWORD_FILE). Hex only, so it needs no quoting anywhere. 0644 like
# the other files the containers read (see the end).
postgres_password() {
  random > "$dir/postgres_password"
  chmod 644 "$dir/postgres_password"
}
# The workers' store URL, password included (storeFile in dropline.config.json), made from
# postgres_password. The password goes into the URL as it is: hex needs no percent-encoding,
# so one that is not hex (edited by hand) is refused rather than written into a broken URL.
store_url() {
  password=$(cat "$dir/postgres_password")
  case $password in
    '' | *[!0-9a-f]*)
      echo "$dir/postgres_password is not a hex password: cannot make store_url from it" >&2
      exit 1 ;;
  esac
  printf 'postgres://dropline:%s@postgres:5432/dropline\n' "$password" > "$dir/store_url"
  chmod 644 "$dir/store_url"
}

if [ -e "$dir/minio_root_password" ] && [ "${1:-}" != "--force" ]; then
  # Secrets made before the stack had PostgreSQL: add its password and the store URL made
  # from it, keep the rest. A new password always comes with a new store_url (they agree).
  if [ ! -e "$dir/postgres_password" ]; then
    postgres_password
    store_url
    echo "added postgres_password and store_url to $dir" >&2
  elif [ ! -e "$dir/store_url" ]; then
    store_url
    echo "added store_url (from postgres_password) to $dir" >&2
  fi
  echo "secrets already in $dir (run with --force to replace them)" >&2
  exit 0
fi
mkdir -p "$dir"
chmod 700 "$dir"
rm -f "$dir/sftp_host_ed25519_key" "$dir/sftp_host_ed25519_key.pub" \
      "$dir/sftp_client_key" "$dir/sftp_client_key.pub" "$dir/partner_key" "$dir/partner_key.pub"

# The sandbox's demo account (dropline sandbox accepts demo/demo unless --accounts says otherwise).
printf 'demo\n' > "$dir/api_password"
# The secret in the delivery-report URL.
random > "$dir/notify_token"
# The ops API's bearer token: ops.listen is 0.0.0.0 inside the container, so one is required.
random > "$dir/ops_token"
# MinIO's root user; dropline uses the same key through the AWS SDK's shared credentials file.
printf 'dropline\n' > "$dir/minio_root_user"
random > "$dir/minio_root_password"
# --force replaces it here, but PostgreSQL keeps the password its volume was made with:
# remove the volume too (`docker compose -f infra/compose.yaml down -v`; the store is lost).
postgres_password
store_url
{
  echo '[default]'
  echo 'aws_access_key_id = dropline'
  echo "aws_secret_access_key = $(cat "$dir/minio_root_password")"
} > "$dir/aws_credentials"
# The SFTP server's host key (dropline pins its public half), dropline's login key, and the
# partner's own login key for uploads from this machine (`sftp -i infra/secrets/partner_key`).
ssh-keygen -q -t ed25519 -N '' -C 'sftp host key' -f "$dir/sftp_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C 'dropline' -f "$dir/sftp_client_key"
ssh-keygen -q -t ed25519 -N '' -C 'partner' -f "$dir/partner_key"
# Keys used from this machine stay 0600 (OpenSSH refuses a private key others can read, and
# sshd a host key). The containers' users (uid 1000 in dropline) read the rest through bind
# mounts, which keep the host's modes: those are 0644 inside the 0700 folder.
chmod 600 "$dir/sftp_host_ed25519_key" "$dir/partner_key"
chmod 644 "$dir/api_password" "$dir/notify_token" "$dir/ops_token" "$dir/minio_root_user" "$dir/minio_root_password" \
          "$dir/aws_credentials" "$dir/sftp_client_key" "$dir/sftp_client_key.pub" \
          "$dir/sftp_host_ed25519_key.pub" "$dir/partner_key.pub"

fingerprint=$(ssh-keygen -l -E sha256 -f "$dir/sftp_host_ed25519_key.pub" | awk '{print $2}')
echo "secrets written to $dir; the SFTP server's host key is $fingerprint"
