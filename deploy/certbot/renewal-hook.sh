#!/bin/sh
# /etc/letsencrypt/renewal-hooks/deploy/duet — certbot runs this after it renewed the certificate
# (docs/deploy.md, step 4). nginx reloads it without dropping a connection; coturn gets the new files through
# LoadCredential= only when it starts again (its relayed calls come back by ICE restart within seconds).
set -e
systemctl reload nginx
systemctl restart coturn
