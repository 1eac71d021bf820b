// The Spanish of every code of src/errors.ts (REASONS, ERRORS): what it means (`message`) and
// what to do (`hint`). Their English is src/errors.ts' own, served by /api/meta (`texts`).
// test/unit/dashboard-texts.test.ts fails when a code has no Spanish here.

export const es = {
  // registros (la línea no se envía)
  LINE_TOO_LONG: {
    message: 'la línea es más larga que el máximo permitido',
    hint: 'divida la línea, o revise que el archivo de verdad tenga saltos de línea',
  },
  MALFORMED_QUOTE: {
    message: 'un campo entre comillas nunca se cierra, o hay texto después de la comilla de cierre',
    hint: 'cierre la comilla; dentro de un campo entre comillas, escriba una comilla como ""',
  },
  TOO_MANY_FIELDS: {
    message: 'el registro tiene más campos que el encabezado',
    hint: 'ponga el mensaje entre comillas cuando contiene el separador',
  },
  MISSING_FIELD: {
    message: 'un `{{campo}}` del mensaje no tiene valor en esta línea (su columna está vacía o falta)',
    hint: 'llene en esa línea la columna que nombra el mensaje, o quite la línea; un {{ literal se escribe {{{{',
  },
  INVALID_MESSAGE_ID: {
    message: 'el messageId tiene más de 64 caracteres',
    hint: 'use identificadores de máximo 64 caracteres',
  },
  DUPLICATE_MESSAGE_ID: {
    message: 'el messageId ya se usó en una línea anterior del archivo',
    hint: 'dele a cada línea su propio messageId',
  },
  INVALID_NUMBER: {
    message: 'no es un número celular válido',
    hint: 'escriba un celular colombiano como 3001234567 o 573001234567, y los demás en E.164 (+5215512345678)',
  },
  INVALID_EMAIL: {
    message: 'no es un correo electrónico válido',
    hint: 'escriba una dirección por campo, como nombre@ejemplo.com (sin nombre visible ni mailto:); un dominio con tildes sirve',
  },
  NOT_MOBILE: {
    message: 'el número es fijo, no celular',
    hint: 'los SMS solo llegan a celulares: quite la línea o corrija el número',
  },
  COUNTRY_NOT_ALLOWED: {
    message: 'el país del número no está permitido para este origen',
    hint: 'quite la línea, o agregue el país a allowedCountries del origen',
  },
  EMPTY_MESSAGE: {
    message: 'el mensaje está vacío',
    hint: 'escriba el mensaje después del separador',
  },
  // ni enviados ni inválidos
  DUPLICATE: {
    message: 'el mismo número con el mismo mensaje ya está en una línea anterior',
    hint: 'no hay nada que hacer: el destinatario recibe el mensaje una sola vez',
  },
  SUPPRESSED: {
    message: 'el número está en la lista de exclusión (pidió no recibir mensajes)',
    hint: 'no hay nada que hacer: a los números excluidos nunca se les envía',
  },
  CONTACT_LIMIT: {
    message:
      'la misma entidad ya contactó este número hoy, o por otro canal esta semana (contactLimit, Ley 2300 de 2023)',
    hint: 'no hay nada que hacer: el detalle dice qué regla y cuándo; envíelo otro día (u otra semana), o quite el contactLimit',
  },
  NO_CONSENT: {
    message:
      'el número (o la dirección) no tiene consentimiento para el canal del archivo en la lista de consentimiento',
    hint: 'no hay nada que hacer: agregue el número y el canal a la lista de consentimiento (consent.list) cuando la persona acepte',
  },
  // advertencias (se envía igual)
  CONTROL_CHARS_REMOVED: {
    message: 'se quitaron caracteres de control del mensaje',
    hint: 'quite las tabulaciones y otros caracteres de control del mensaje',
  },
  LONG_MESSAGE: {
    message: 'el mensaje tiene más de 500 caracteres',
    hint: 'los mensajes largos cuestan varios segmentos; acórtelo si puede',
  },
  UCS2_MESSAGE: {
    message: 'el mensaje necesita la codificación UCS-2, que cuesta más segmentos',
    hint: 'cambie los caracteres señalados (por ejemplo á por a) para enviar en GSM-7',
  },
  // todo el archivo (no se envía nada)
  EMPTY_FILE: {
    message: 'el archivo no tiene ningún registro de datos',
    hint: 'revise que se haya dejado el archivo correcto',
  },
  BINARY_FILE: {
    message: 'el archivo contiene bytes NUL: no es un archivo de texto',
    hint: 'exporte el archivo como texto (UTF-8) y déjelo de nuevo',
  },
  NO_MESSAGE: {
    message: 'un archivo masivo debe empezar con el mensaje, pero su primer registro es una lista de números',
    hint: 'ponga el mensaje en la primera línea, o agregue el mensaje a cada línea (formato personalizado)',
  },
  TOO_MANY_INVALID: {
    message: 'demasiados destinatarios inválidos',
    hint: 'corrija las líneas que aparecen en errors.csv y deje el archivo de nuevo',
  },
  FILE_TOO_LARGE: {
    message: 'el archivo es más grande que el máximo configurado',
    hint: 'divida el archivo, o suba maxFileBytes',
  },
  TRAILER_MISMATCH: {
    message: 'la cantidad de registros del cierre no coincide con los registros leídos',
    hint: 'el archivo puede estar incompleto o cortado: déjelo de nuevo completo',
  },
  BAD_DIRECTIVE: {
    message:
      'una directiva `#!` es desconocida, no se entiende, está dos veces o no se permite en este origen',
    hint: 'corrija o quite la línea `#!` indicada (directivas: docs/format.md); una línea `#!` que sea un comentario va después de la primera línea de datos',
  },
  UNKNOWN_PLACEHOLDER: {
    message: 'un `{{campo}}` del mensaje no corresponde a ninguna columna del encabezado',
    hint: 'corrija el campo o agregue la columna al encabezado; un {{ literal se escribe {{{{',
  },
  UNKNOWN_TEMPLATE: {
    message: 'el templateId del archivo de correo no es una plantilla de su cuenta de correo',
    hint: 'use un id que tenga la cuenta (`dropline validate --source <nombre>` los lista), o cree primero la plantilla en el servicio',
  },
  TOO_MANY_ATTACHMENTS: {
    message: 'la carpeta de adjuntos del archivo de correo tiene más de 10 archivos (el límite del servicio)',
    hint: 'deje máximo 10 archivos en attachments/<nombre del archivo>/ junto a la bandeja (comprímalos en uno si hace falta) y deje el archivo de nuevo',
  },
  ATTACHMENTS_TOO_LARGE: {
    message: 'los adjuntos del archivo de correo suman más de 8 MB (el límite del servicio, 8.000.000 bytes)',
    hint: 'haga más livianos los archivos de attachments/<nombre del archivo>/ (comprima los PDF), o envíe un enlace en el mensaje, y deje el archivo de nuevo',
  },
  MISSING_TRAILER: {
    message: 'el origen exige una línea de cierre (EOF;<n>) y no llegó antes del tiempo límite',
    hint: 'termine el archivo con EOF;<cantidad de registros de destinatarios>',
  },
  MARKER_MISMATCH: {
    message:
      'el marcador `.done` del archivo tiene un sha256 que no es el del archivo (o no son 64 dígitos hexadecimales)',
    hint: 'no se envió nada: suba otra vez el archivo completo y luego su marcador con sha256=<el sha256 de ese archivo> (lo muestra sha256sum)',
  },
  DUPLICATE_FILE: {
    message: 'el mismo contenido ya se envió completo desde este origen',
    hint: 'use send --force para enviarlo otra vez a propósito',
  },
  FILE_CHANGED: {
    message: 'el archivo cambió después de tomarlo (su tamaño o su sha256 ya no son los de ese momento)',
    hint: 'no se envió nada; no escriba nunca en un archivo que ya está en la bandeja o en processing/: deje la versión final de nuevo con otro nombre',
  },
  NOT_A_REGULAR_FILE: {
    message:
      'el nombre ya no apunta a un archivo normal (en su lugar hay un enlace simbólico, un FIFO, un dispositivo o una carpeta)',
    hint: 'deje un archivo normal; dropline nunca sigue enlaces ni lee FIFO en un origen',
  },
  FILE_UNREADABLE: {
    message: 'dropline no tiene permiso para leer el archivo',
    hint: 'dele permiso de lectura al usuario de dropline (chmod o+r o el grupo del origen) y deje el archivo de nuevo',
  },
  // errores de operación
  DROPLINE_ERR_USAGE: {
    message: 'comando inválido',
    hint: 'ejecute dropline --help para ver los comandos y sus opciones',
  },
  DROPLINE_ERR_CONFIG: {
    message: 'configuración inválida',
    hint: 'el mensaje dice cuál clave está mal y qué se permite',
  },
  DROPLINE_ERR_FILE_UNREADABLE: {
    message: 'no se puede leer el archivo',
    hint: 'revise la ruta y sus permisos',
  },
  DROPLINE_ERR_SUPPRESSION_LIST: {
    message: 'no se puede leer la lista de exclusión',
    hint: 'revise la ubicación de suppressionList (una ruta local, s3://bucket/clave o <origen>:<ruta>): un archivo de texto, un número por línea',
  },
  DROPLINE_ERR_SUPPRESSION_LIST_REFUSED: {
    message:
      'se rechazó el contenido nuevo de la lista de exclusión: no es una lista de números, o le faltan la mayoría de sus números',
    hint: 'corrija la lista (texto plano, UTF-8 o UTF-16 con BOM, un número por línea, sin comprimir, subida completa); los archivos a los que aplica esperan mientras tanto. Una lista vaciada o recortada a propósito se toma al reiniciar',
  },
  DROPLINE_ERR_CONSENT_LIST: {
    message: 'no se puede leer la lista de consentimiento',
    hint: 'revise la ubicación de consent.list (una ruta local, s3://bucket/clave o <origen>:<ruta>): un archivo de texto, una entrada "<número o dirección>;<canales>" por línea',
  },
  DROPLINE_ERR_CONSENT_LIST_REFUSED: {
    message:
      'se rechazó el contenido nuevo de la lista de consentimiento: no es una lista de consentimiento, o le faltan la mayoría de sus entradas',
    hint: 'corrija la lista (texto plano UTF-8, una entrada "<número o dirección>;<canales>" por línea, subida completa); todos los archivos esperan mientras tanto. Una lista vaciada o recortada a propósito se toma al reiniciar',
  },
  DROPLINE_ERR_SERVICE_AUTH: {
    message: 'el servicio de mensajería rechazó las credenciales o el token',
    hint: 'revise api.username y api.password; otro proceso que inicie sesión con la misma cuenta hace vencer este token',
  },
  DROPLINE_ERR_SERVICE_FORBIDDEN: {
    message: 'el servicio de mensajería no le permite el acceso a esta cuenta o dirección IP (403)',
    hint: 'la cuenta está en pausa: pídale al soporte del servicio que habilite la cuenta o esta dirección IP, y luego reanude',
  },
  DROPLINE_ERR_SERVICE_REJECTED: {
    message: 'el servicio de mensajería rechazó la solicitud por inválida (400)',
    hint: 'el motivo dice cuál campo; a los demás destinatarios del lote sí se les envió',
  },
  DROPLINE_ERR_SERVICE_TOO_LARGE: {
    message:
      'el servicio de mensajería rechazó por demasiado grande una solicitud de un solo destinatario (413)',
    hint: 'acorte el texto del mensaje o el callbackData (SMS), o los campos de ese destinatario o los adjuntos (correo)',
  },
  DROPLINE_ERR_SERVICE_RATE_LIMITED: {
    message: 'el servicio de mensajería siguió respondiendo 429 (demasiadas solicitudes)',
    hint: 'baje api.ratePerSecond o api.concurrency y luego reintente',
  },
  DROPLINE_ERR_SERVICE_UNAVAILABLE: {
    message: 'el servicio de mensajería siguió sin responder o fallando (5xx) en todos los reintentos',
    hint: 'a estos destinatarios no se les envió nada; reintente cuando el servicio vuelva',
  },
  DROPLINE_ERR_SERVICE_IN_DOUBT: {
    message: 'la solicitud pudo llegar al servicio de mensajería, pero no volvió respuesta',
    hint: 'los informes de entrega lo aclaran; si no, Reintentar reenvía el lote (los destinatarios podrían recibir el SMS dos veces)',
  },
  DROPLINE_ERR_SERVICE_FAILED: {
    message: 'el servicio de mensajería dio una respuesta inesperada',
    hint: 'el mensaje muestra el código HTTP; revise api.baseUrl',
  },
  DROPLINE_ERR_SERVICE_BAD_CHUNK: {
    message: 'un lote planeado no se puede enviar como POST /mtmessage/massive',
    hint: 'un lote necesita al menos un destino y un callbackData de máximo 200 caracteres',
  },
  DROPLINE_ERR_SANDBOX: {
    message: 'el sandbox no puede arrancar',
    hint: 'elija otro --port, o revise el archivo de --accounts',
  },
  DROPLINE_ERR_NOTIFY_LISTEN: {
    message: 'el receptor de informes de entrega no puede escuchar en notify.listen',
    hint: 'otro proceso tiene el puerto, o la dirección no es de esta máquina: cambie notify.listen',
  },
  DROPLINE_ERR_OPS_LISTEN: {
    message: 'el servidor de operación no puede escuchar en ops.listen',
    hint: 'otro proceso tiene el puerto, o la dirección no es de esta máquina: cambie ops.listen',
  },
  DROPLINE_ERR_UNKNOWN_FILE: {
    message: 'no hay ningún archivo con este fileId',
    hint: 'la lista de campañas muestra los archivos y sus fileId',
  },
  DROPLINE_ERR_PRUNED: {
    message:
      'los destinatarios y los informes de entrega del archivo se borraron por retención (retentionDays)',
    hint: 'su resumen conserva los conteos; guarde los report.csv, o suba retentionDays, para conservar más',
  },
  DROPLINE_ERR_FILE_STATE: {
    message: 'el archivo no está en un estado que permita esta acción',
    hint: 'la página de la campaña muestra su estado y qué acciones permite',
  },
  DROPLINE_ERR_STORE: {
    message: 'no se puede usar la base de datos',
    hint: 'revise la configuración store, la carpeta del archivo de la base (permisos, espacio libre) y que su esquema no sea más nuevo que este dropline',
  },
  DROPLINE_ERR_STORE_CONFLICT: {
    message: 'la base de datos rechazó una escritura que choca con lo que otro hizo primero',
    hint: 'otro trabajador o comando cambió el mismo archivo al mismo tiempo; dropline vuelve a leer y sigue, y la acción se puede repetir',
  },
  DROPLINE_ERR_STORE_UNAVAILABLE: {
    message:
      'no se puede conectar con la base de datos (conexión perdida, la base reiniciando o rechazando conexiones)',
    hint: 'revise que la base esté arriba y se pueda alcanzar en la URL de store; dropline espera y sigue donde iba cuando vuelva a responder',
  },
  DROPLINE_ERR_STORE_SCHEMA: {
    message: 'el esquema de la base de datos es más nuevo que este dropline',
    hint: 'un dropline más nuevo migró esta base: use esa versión (o una más nueva); nunca apunte uno más viejo a ella',
  },
  DROPLINE_ERR_STORE_READONLY: {
    message: 'no se puede escribir en la base de datos',
    hint: 'deje que el usuario de dropline pueda escribir el archivo de la base, su carpeta y su sistema de archivos (no montado de solo lectura, sin chattr +i) y libere espacio; `dropline run` no arranca hasta entonces',
  },
  DROPLINE_ERR_S3: {
    message: 'no se puede conectar con un origen S3, o este rechazó una operación',
    hint: 'revise bucket, region, endpoint y forcePathStyle, las credenciales (env, perfil, identidad web) y lo que permite la política del bucket',
  },
  DROPLINE_ERR_SFTP: {
    message: 'no se puede conectar con un origen SFTP, o este rechazó una operación',
    hint: 'revise host, puerto, usuario y la llave o contraseña del origen; dropline se reconecta con espera y reintenta en la siguiente revisión',
  },
  DROPLINE_ERR_SFTP_HOST_KEY: {
    message: 'la llave del servidor SFTP no es la fijada',
    hint: 'compare hostKeySha256 con ssh-keygen -lf de la llave pública del servidor (pregúntele al aliado); una llave cambiada también puede indicar que alguien se metió en medio',
  },
};
